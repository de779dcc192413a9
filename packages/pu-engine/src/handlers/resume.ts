import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { resumeAgent } from "../agents/launcher.js";
import { refuseWhileStopping, type EngineState } from "../state.js";

/** `pu play`: restarts a suspended agent with its type's resume command, in the same directory. */
export async function handleResume(state: EngineState, req: RequestOf<"resume">): Promise<ResultOf<"resume">> {
  refuseWhileStopping(state);
  const root = await state.project(req.projectRoot);
  return { agent: await resumeAgent(state, root, req.agentId) };
}
