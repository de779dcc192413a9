// A worktree's diff against its base, drawn by diff2html (which escapes the file text it
// renders), with the file list and +/−; merge (merge / squash / ff-only) and clean with the
// CLI's refusals: a clean that would lose work is refused, and only an explicit, confirmed
// "force" discards it.
import { html as diffHtml } from "diff2html";
import type { WorktreeDiff } from "@pu/ipc/protocol";
import { call } from "./api.js";
import { clear, h } from "./dom.js";
import { act, button, dialog, say, sayError } from "./ui.js";

let layout: "side-by-side" | "line-by-line" = window.innerWidth < 900 ? "line-by-line" : "side-by-side";

/** The file list and the rendered patch of one diff (also used for a group member's diff). */
export function renderPatch(diff: WorktreeDiff): HTMLElement {
  const files = h(
    "ul",
    { className: "diff-files" },
    ...diff.files.map((file) =>
      h("li", {}, h("span", { className: "added" }, `+${file.insertions}`), " ", h("span", { className: "removed" }, `−${file.deletions}`), " ", file.path, file.binary ? " (binary)" : ""),
    ),
  );
  const body = h("div", { className: "diff-body", "data-layout": layout });
  if (diff.error) body.append(h("p", { className: "error" }, diff.error));
  else if (!diff.patch) body.append(h("p", { className: "empty" }, "No changes against the base."));
  // diff2html builds its table from the patch with every line escaped; nothing else is HTML.
  else body.innerHTML = diffHtml(diff.patch, { outputFormat: layout, drawFileList: false, matching: "lines" });
  return h(
    "div",
    { className: "diff", "data-worktree-id": diff.worktreeId },
    h("p", { className: "diff-summary" }, `${diff.branch} → ${diff.baseBranch} · ${diff.files.length} files · `, h("span", { className: "added" }, `+${diff.insertions}`), " ", h("span", { className: "removed" }, `−${diff.deletions}`)),
    files,
    body,
  );
}

export function renderDiff(view: HTMLElement, project: string, worktreeId: string): () => void {
  clear(view);
  const content = h("div", {}, h("p", {}, "Loading the diff…"));
  const strategy = h("select", { "aria-label": "Merge strategy", name: "strategy" }, h("option", { value: "merge" }, "merge"), h("option", { value: "squash" }, "squash"), h("option", { value: "ff-only" }, "ff-only"));
  const load = async () => {
    try {
      const result = await call("diff", { projectRoot: project, worktreeId });
      const diff = result.worktrees[0];
      clear(content);
      if (diff) content.append(renderPatch(diff));
    } catch (error) {
      sayError(error);
    }
  };
  const merge = button(
    "Merge",
    (b) =>
      void dialog(`Merge ${worktreeId}?`, `Merges its branch into the base branch (${strategy.value}). The worktree stays until you clean it.`, "Merge", []).then(
        (ok) =>
          ok &&
          act(b, async () => {
            const result = await call("merge", { projectRoot: project, worktreeId, strategy: strategy.value });
            await load();
            return result.nothingToMerge ? `${worktreeId}: nothing to merge` : `merged ${worktreeId} into ${result.baseBranch} (${result.strategy})${result.commit ? ` at ${result.commit.slice(0, 10)}` : ""}`;
          }),
      ),
    { className: "primary", "data-action": "merge" },
  );
  const clean = button(
    "Clean",
    (b) =>
      void dialog(`Clean ${worktreeId}?`, "Stops its agents, removes the worktree and deletes its branch. pu refuses if that would lose uncommitted files or unmerged commits.", "Clean", [], true).then(
        (ok) => ok && act(b, () => cleanWorktree(project, worktreeId, false)),
      ),
    { className: "danger", "data-action": "clean" },
  );
  const toggle = button(layout === "side-by-side" ? "Unified" : "Side by side", (b) => {
    layout = layout === "side-by-side" ? "line-by-line" : "side-by-side";
    b.textContent = layout === "side-by-side" ? "Unified" : "Side by side";
    void load();
  });
  view.append(h("div", { className: "diff-head" }, h("a", { href: "#/", className: "button" }, "← Agents"), h("h2", {}, `Diff of ${worktreeId}`), strategy, merge, clean, toggle), content);
  void load();
  return () => undefined;
}

async function cleanWorktree(project: string, worktreeId: string, force: boolean): Promise<string> {
  try {
    const result = await call("clean", { projectRoot: project, worktreeId, force });
    const kept = result.kept.find((k) => k.worktreeId === worktreeId);
    if (kept) return offerForce(project, worktreeId, kept.reason);
    location.hash = "#/";
    return `cleaned ${worktreeId}`;
  } catch (error) {
    if (force) throw error;
    return offerForce(project, worktreeId, error instanceof Error ? error.message : String(error));
  }
}

async function offerForce(project: string, worktreeId: string, reason: string): Promise<string> {
  say(`${worktreeId} was kept: ${reason}`, "error");
  const sure = await dialog(`Discard the work in ${worktreeId}?`, `${reason}. Forcing deletes it for good.`, "Discard and clean", [], true);
  if (!sure) return `${worktreeId} was kept: ${reason}`;
  return cleanWorktree(project, worktreeId, true);
}
