import type { DiffResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DiffContext = Pick<EngineServices, "state" | "worktrees" | "remote">;

/** Changes of one worktree, or of every active one, against the branch it left. */
export async function handleDiff(ctx: DiffContext, req: RequestOf<"diff">): Promise<DiffResult> {
  const placed = req.worktreeId === undefined ? undefined : ctx.remote.placedWorktree(req.worktreeId);
  if (placed) return ctx.remote.forward(placed, "diff", { worktreeId: req.worktreeId, ...(req.stat ? { stat: true } : {}) });
  return ctx.worktrees.diff(await ctx.state.project(req.projectRoot), req);
}
