import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type InputContext = Pick<EngineServices, "agents" | "remote">;

/** Raw bytes into the agent's terminal, exactly as given (keys, Enter, control codes). */
export async function handleInput(ctx: InputContext, req: RequestOf<"input">): Promise<ResultOf<"input">> {
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.forwardAgent(placed, "input", { agentId: req.agentId, data: req.data });
  return ctx.remote.here(req.agentId, async () => ({ bytes: await ctx.agents.input(req.agentId, Buffer.from(req.data.buffer, req.data.byteOffset, req.data.byteLength)) }));
}
