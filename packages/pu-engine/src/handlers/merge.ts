import type { MergeResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type MergeContext = Pick<EngineServices, "state" | "worktrees" | "remote">;

export async function handleMerge(ctx: MergeContext, req: RequestOf<"merge">): Promise<MergeResult> {
  const placed = await ctx.remote.route(req.worktreeId, "worktree");
  if (placed) return ctx.remote.merge(placed, req.worktreeId, req.strategy, req.message);
  const root = await ctx.state.project(req.projectRoot);
  return ctx.remote.here(req.worktreeId, () => ctx.worktrees.merge(root, { worktreeId: req.worktreeId, strategy: req.strategy, ...(req.message !== undefined ? { message: req.message } : {}) }));
}
