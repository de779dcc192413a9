import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { sessionReadiness } from "../session/live-agent.js";
import { requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";

/**
 * A turn state reported by the agent's own CLI through its hook (`pu signal`): it wins over
 * what the screen suggests until the next Enter reaches the agent.
 */
export async function handleAgentSignal(state: EngineState, req: RequestOf<"agent_signal">): Promise<ResultOf<"agent_signal">> {
  const live = await requireSession(state, req.agentId);
  if (live.session.exitCode !== null) throw new PuError("INVALID_STATE", `${req.agentId} has exited; its signals no longer count`);
  live.turnSignal = { kind: req.signal, at: Date.now() };
  state.events.emit("agent_turn_signal", { live });
  const readiness = sessionReadiness(live);
  return { agentId: req.agentId, status: readiness.status, ...(readiness.waitingReason ? { waitingReason: readiness.waitingReason } : {}) };
}
