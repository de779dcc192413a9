import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type ResumeContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu play`: restarts a suspended agent with its type's resume command, in the same directory. */
export async function handleResume(ctx: ResumeContext, req: RequestOf<"resume">): Promise<ResultOf<"resume">> {
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.forward(placed, "resume", { agentId: req.agentId });
  const root = await ctx.state.project(req.projectRoot);
  return { agent: await ctx.remote.here(req.agentId, () => ctx.agents.resume(root, req.agentId)) };
}
