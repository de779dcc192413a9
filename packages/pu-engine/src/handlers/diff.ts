import type { DiffResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DiffContext = Pick<EngineServices, "state" | "worktrees">;

/** Changes of one worktree, or of every active one, against the branch it left. */
export async function handleDiff(ctx: DiffContext, req: RequestOf<"diff">): Promise<DiffResult> {
  return ctx.worktrees.diff(await ctx.state.project(req.projectRoot), req);
}
