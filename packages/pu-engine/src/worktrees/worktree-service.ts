/**
 * A project's worktrees on a person's request: their diff against the branch each left,
 * the recorded merge (crash-settled) and the clean. The merge and clean paths keep the
 * manifest in step with git (merge-recorded.ts, clean-worktrees.ts); the handlers only
 * resolve the project and pass the request on.
 */
import { loadConfig } from "@pu/core/config";
import type { CleanResult, DiffResult, MergeResult } from "@pu/ipc/protocol";
import { diffWorktree } from "../git/diff.js";
import { currentBranch } from "../git/runner.js";
import { worktreeIn, type EngineState } from "../state.js";
import { cleanWorktrees, type CleanRequest } from "./clean-worktrees.js";
import { mergeRecordedWorktree, type MergeRequest } from "./merge-recorded.js";

export class WorktreeService {
  constructor(private readonly state: EngineState) {}

  /** Changes of one worktree, or of every active one, against the branch it left. */
  async diff(root: string, req: { worktreeId?: string | undefined; stat?: boolean | undefined }): Promise<DiffResult> {
    const m = await this.state.store.read(root);
    const targets = req.worktreeId ? [worktreeIn(m, req.worktreeId)] : Object.values(m.worktrees).filter((w) => w.status === "active");
    const fallbackBase = targets.some((w) => !w.baseBranch) ? ((await currentBranch(root)) ?? "HEAD") : "HEAD";
    const worktrees: DiffResult["worktrees"] = [];
    const { envFiles } = await loadConfig(root);
    for (const wt of targets) {
      const baseBranch = wt.baseBranch ?? fallbackBase;
      try {
        const changes = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch, stat: req.stat, envFiles });
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

  merge(root: string, req: MergeRequest): Promise<MergeResult> {
    return mergeRecordedWorktree(this.state, root, req);
  }

  /** `owners` in the request keeps work a running ticket, group or plan owns (absent with --force inside). */
  clean(root: string, req: CleanRequest): Promise<CleanResult> {
    return cleanWorktrees(this.state, root, req);
  }
}
