import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type AgentSignalContext = Pick<EngineServices, "agents">;

/** A turn state reported by the agent's own CLI through its hook (`pu signal`). */
export async function handleAgentSignal(ctx: AgentSignalContext, req: RequestOf<"agent_signal">): Promise<ResultOf<"agent_signal">> {
  return ctx.agents.signal(req.agentId, req.signal);
}
