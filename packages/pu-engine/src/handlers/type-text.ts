import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TypeTextContext = Pick<EngineServices, "agents" | "remote">;

export async function handleTypeText(ctx: TypeTextContext, req: RequestOf<"type_text">): Promise<ResultOf<"type_text">> {
  const placed = ctx.remote.placedAgent(req.agentId);
  if (placed) return ctx.remote.forwardAgent(placed, "type_text", { agentId: req.agentId, text: req.text, submit: req.submit });
  return { bytes: await ctx.agents.typeText(req.agentId, req.text, req.submit) };
}
