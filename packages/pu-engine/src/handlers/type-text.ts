import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TypeTextContext = Pick<EngineServices, "agents">;

export async function handleTypeText(ctx: TypeTextContext, req: RequestOf<"type_text">): Promise<ResultOf<"type_text">> {
  return { bytes: await ctx.agents.typeText(req.agentId, req.text, req.submit) };
}
