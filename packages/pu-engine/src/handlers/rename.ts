import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type RenameContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu rename`: an agent (free text) or a worktree (its display name; the branch keeps its name). */
export async function handleRename(ctx: RenameContext, req: RequestOf<"rename">): Promise<ResultOf<"rename">> {
  const placed = await ctx.remote.route(req.target, "either");
  if (placed) return ctx.remote.forward(placed, "rename", { target: req.target, name: req.name });
  const root = await ctx.state.project(req.projectRoot);
  return ctx.remote.here(req.target, () => ctx.agents.rename(root, req.target, req.name));
}
