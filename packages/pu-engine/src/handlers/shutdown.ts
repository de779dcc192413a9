import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";

/** Replies first; the daemon then stops accepting, suspends every agent and exits. */
export async function handleShutdown(state: EngineState, _req: RequestOf<"shutdown">): Promise<ResultOf<"shutdown">> {
  state.requestShutdown();
  return { stopping: true };
}
