import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type RunSwarmContext = Pick<EngineServices, "state" | "automation">;

export async function handleRunSwarm(ctx: RunSwarmContext, req: RequestOf<"run_swarm">): Promise<ResultOf<"run_swarm">> {
  return ctx.automation.runSwarm(await ctx.state.project(req.projectRoot), req.name, req.vars);
}
