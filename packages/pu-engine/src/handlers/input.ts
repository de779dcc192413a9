import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { benchedAgentMessage, requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";

/** Raw bytes into the agent's terminal, exactly as given (keys, Enter, control codes). */
export async function handleInput(state: EngineState, req: RequestOf<"input">): Promise<ResultOf<"input">> {
  const live = await requireSession(state, req.agentId, { explainBenched: true });
  const { session } = live;
  if (session.exitCode !== null && live.stopIntent === "suspend") {
    throw new PuError("INVALID_STATE", benchedAgentMessage(req.agentId));
  }
  if (session.exitCode !== null) {
    throw new PuError("INVALID_STATE", `${req.agentId} has exited (code ${session.exitCode}); it takes no input`);
  }
  const data = Buffer.from(req.data.buffer, req.data.byteOffset, req.data.byteLength);
  session.write(data);
  return { bytes: data.length };
}
