import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type RenameContext = Pick<EngineServices, "state" | "agents">;

/** `pu rename`: an agent (free text) or a worktree (its display name; the branch keeps its name). */
export async function handleRename(ctx: RenameContext, req: RequestOf<"rename">): Promise<ResultOf<"rename">> {
  return ctx.agents.rename(await ctx.state.project(req.projectRoot), req.target, req.name);
}
