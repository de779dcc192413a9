import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type RenameContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu rename`: an agent (free text) or a worktree (its display name; the branch keeps its name). */
export async function handleRename(ctx: RenameContext, req: RequestOf<"rename">): Promise<ResultOf<"rename">> {
  const placed = ctx.remote.placed(req.target);
  if (placed) return ctx.remote.forward(placed, "rename", { target: req.target, name: req.name });
  return ctx.agents.rename(await ctx.state.project(req.projectRoot), req.target, req.name);
}
