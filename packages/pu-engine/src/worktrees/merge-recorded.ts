// A worktree merged into its base branch with the manifest kept in step (pu merge, pu group pick).
import { loadConfig } from "@pu/core/config";
import { isPuError, PuError } from "@pu/core/errors";
import type { WorktreeStatus } from "@pu/core/manifest";
import { worktreesDir } from "@pu/core/paths";
import type { MergeResult } from "@pu/ipc/protocol";
import { nowIso, worktreeIn, type EngineState } from "../state.js";
import { mergeWorktree } from "../git/merge.js";
import { currentBranch } from "../git/runner.js";

export interface MergeRequest {
  worktreeId: string;
  strategy: "merge" | "squash" | "ff-only";
  message?: string;
}

/**
 * Brings `pu/<name>` into its base branch. The manifest shows `merging` while git works,
 * then `merged`, or `failed` with the conflict in `error` (written before the error reply).
 */
export async function mergeRecordedWorktree(state: EngineState, root: string, req: MergeRequest): Promise<MergeResult> {
  const { id, previous, branch, path, baseBranch } = await state.updateManifest(root, async (m) => {
    const wt = worktreeIn(m, req.worktreeId);
    if (wt.status !== "active" && wt.status !== "failed") {
      throw new PuError("INVALID_STATE", `worktree ${wt.id} (${wt.name}) is ${wt.status}; only an active worktree can be merged`);
    }
    const previous: WorktreeStatus = wt.status;
    const baseBranch = wt.baseBranch ?? (await currentBranch(root));
    if (!baseBranch) throw new PuError("INVALID_STATE", `worktree ${wt.id} has no base branch and ${root} has no current branch to merge into`);
    wt.status = "merging";
    return { id: wt.id, previous, branch: wt.branch, path: wt.path, baseBranch };
  });

  const record = (fn: (wt: Record<string, unknown> & { status: WorktreeStatus; mergedAt?: string }) => void) =>
    state.updateManifest(root, (m) => {
      const wt = m.worktrees[id];
      if (wt) fn(wt as typeof wt & Record<string, unknown>);
    });

  try {
    const outcome = await mergeWorktree({
      projectRoot: root,
      path,
      branch,
      baseBranch,
      strategy: req.strategy,
      message: req.message,
      worktreesDir: worktreesDir(root),
      ignoreUntracked: (await loadConfig(root)).envFiles,
    });
    if (outcome.alreadyUpToDate) {
      await record((wt) => {
        wt.status = previous;
      });
      state.log.event("merge_nothing", { projectRoot: root, worktreeId: id, baseBranch });
      return { worktreeId: id, status: previous, strategy: req.strategy, baseBranch, commit: outcome.commit, nothingToMerge: true };
    }
    await record((wt) => {
      wt.status = "merged";
      wt.mergedAt = nowIso();
      delete wt.error;
    });
    state.log.event("merge", { projectRoot: root, worktreeId: id, baseBranch, commit: outcome.commit });
    return { worktreeId: id, status: "merged", strategy: req.strategy, baseBranch, commit: outcome.commit };
  } catch (err) {
    const conflict = isPuError(err) && err.code === "MERGE_CONFLICT";
    // A conflict marks the worktree failed; any other refusal (dirty tree, no fast-forward) leaves it as it was.
    await record((wt) => {
      wt.status = conflict ? "failed" : previous;
      if (conflict) wt.error = (err as Error).message;
    }).catch((writeErr: unknown) => state.log.event("merge_record_failed", { projectRoot: root, worktreeId: id, error: writeErr }));
    state.log.event("merge_failed", { projectRoot: root, worktreeId: id, error: err });
    throw err;
  }
}
