import type { CleanResult, RequestOf } from "@pu/ipc/protocol";
import { ownedWorkIn, type EngineServices } from "../services.js";

export type CleanContext = Pick<EngineServices, "state" | "worktrees" | "queue" | "groups" | "plans" | "remote">;

export async function handleClean(ctx: CleanContext, req: RequestOf<"clean">): Promise<CleanResult> {
  const placed = req.worktreeId === undefined ? undefined : ctx.remote.placedWorktree(req.worktreeId);
  if (placed) return ctx.remote.clean(placed, req.worktreeId!, req.force === true);
  const root = await ctx.state.project(req.projectRoot);
  return ctx.worktrees.clean(root, {
    ...(req.worktreeId !== undefined ? { worktreeIds: [req.worktreeId] } : {}),
    ...(req.all !== undefined ? { all: req.all } : {}),
    ...(req.force !== undefined ? { force: req.force } : {}),
    ...(req.callerAgentId !== undefined ? { callerAgentId: req.callerAgentId } : {}),
    owners: () => ownedWorkIn(ctx, root),
  });
}
