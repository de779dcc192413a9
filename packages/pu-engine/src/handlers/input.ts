import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type InputContext = Pick<EngineServices, "agents">;

/** Raw bytes into the agent's terminal, exactly as given (keys, Enter, control codes). */
export async function handleInput(ctx: InputContext, req: RequestOf<"input">): Promise<ResultOf<"input">> {
  return { bytes: await ctx.agents.input(req.agentId, Buffer.from(req.data.buffer, req.data.byteOffset, req.data.byteLength)) };
}
