import type { DiffResult, RequestOf } from "@pu/ipc/protocol";
import { worktreeIn, type EngineState } from "../state.js";
import { currentBranch, diffWorktree } from "../worktrees.js";

/** Changes of one worktree, or of every active one, against the branch it left. */
export async function handleDiff(state: EngineState, req: RequestOf<"diff">): Promise<DiffResult> {
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  const targets = req.worktreeId ? [worktreeIn(m, req.worktreeId)] : Object.values(m.worktrees).filter((w) => w.status === "active");
  const fallbackBase = targets.some((w) => !w.baseBranch) ? ((await currentBranch(root)) ?? "HEAD") : "HEAD";
  const worktrees: DiffResult["worktrees"] = [];
  for (const wt of targets) {
    const changes = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch ?? fallbackBase, stat: req.stat });
    worktrees.push({ worktreeId: wt.id, name: wt.name, ...changes });
  }
  return { worktrees };
}
