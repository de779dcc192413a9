import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";
import { runSwarm } from "../automation/swarm.js";

export async function handleRunSwarm(state: EngineState, req: RequestOf<"run_swarm">): Promise<ResultOf<"run_swarm">> {
  const root = await state.project(req.projectRoot);
  return runSwarm(state, root, req.name, req.vars);
}
