import type { RequestOf, SuspendResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type SuspendContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu bench`: stops agents so they can be resumed later; nothing about them is forgotten. */
export async function handleSuspend(ctx: SuspendContext, req: RequestOf<"suspend">): Promise<SuspendResult> {
  const placed = ctx.remote.placed(req.target);
  if (placed) return ctx.remote.forward(placed, "suspend", { target: req.target });
  return ctx.agents.suspend(await ctx.state.project(req.projectRoot), req);
}
