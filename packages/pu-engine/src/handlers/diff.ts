import type { DiffResult, RequestOf } from "@pu/ipc/protocol";
import { worktreeIn, type EngineState } from "../state.js";
import { diffWorktree } from "../git/diff.js";
import { currentBranch } from "../git/runner.js";

/** Changes of one worktree, or of every active one, against the branch it left. */
export async function handleDiff(state: EngineState, req: RequestOf<"diff">): Promise<DiffResult> {
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  const targets = req.worktreeId ? [worktreeIn(m, req.worktreeId)] : Object.values(m.worktrees).filter((w) => w.status === "active");
  const fallbackBase = targets.some((w) => !w.baseBranch) ? ((await currentBranch(root)) ?? "HEAD") : "HEAD";
  const worktrees: DiffResult["worktrees"] = [];
  for (const wt of targets) {
    const baseBranch = wt.baseBranch ?? fallbackBase;
    try {
      const changes = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch, stat: req.stat });
      worktrees.push({ worktreeId: wt.id, name: wt.name, ...changes });
    } catch (err) {
      // Asked for by id, its failure is the answer; among all worktrees one broken one must not hide the rest.
      if (req.worktreeId) throw err;
      const error = (err as Error).message;
      worktrees.push({ worktreeId: wt.id, name: wt.name, branch: wt.branch, baseBranch, mergeBase: "", files: [], insertions: 0, deletions: 0, error });
    }
  }
  return { worktrees };
}
