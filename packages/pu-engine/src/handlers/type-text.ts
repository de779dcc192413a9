import { submitPauseMs } from "@pu/core/agent-types";
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { typeText } from "../agents/launch-command.js";
import { benchedAgentMessage, requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";

/** Text typed the way the agent's CLI takes it: one paste where it asked for bracketed paste, Enter as its own key after the type's pause. */
export async function handleTypeText(state: EngineState, req: RequestOf<"type_text">): Promise<ResultOf<"type_text">> {
  const live = await requireSession(state, req.agentId, { explainBenched: true });
  const { session } = live;
  if (session.exitCode !== null && live.stopIntent === "suspend") throw new PuError("INVALID_STATE", benchedAgentMessage(req.agentId));
  if (session.exitCode !== null) throw new PuError("INVALID_STATE", `${req.agentId} has exited (code ${session.exitCode}); it takes no input`);
  const written = await typeText(session, req.text, { submit: req.submit, submitPauseMs: submitPauseMs(live.agentType) });
  if (!written) throw new PuError("INVALID_STATE", `${req.agentId} exited while the text was typed`);
  return { bytes: Buffer.byteLength(req.text) + (req.submit ? 1 : 0) };
}
