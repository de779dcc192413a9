import type { RequestOf, SuspendResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type SuspendContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu bench`: stops agents so they can be resumed later; nothing about them is forgotten. */
export async function handleSuspend(ctx: SuspendContext, req: RequestOf<"suspend">): Promise<SuspendResult> {
  const placed = await ctx.remote.route(req.target, "either");
  if (placed) return ctx.remote.forward(placed, "suspend", { target: req.target });
  const root = await ctx.state.project(req.projectRoot);
  return ctx.remote.here(req.target, () => ctx.agents.suspend(root, req));
}
