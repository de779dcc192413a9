import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TypeTextContext = Pick<EngineServices, "agents" | "remote" | "usage">;

export async function handleTypeText(ctx: TypeTextContext, req: RequestOf<"type_text">): Promise<ResultOf<"type_text">> {
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.forwardAgent(placed, "type_text", { agentId: req.agentId, text: req.text, submit: req.submit });
  // A person's text to an agent pu stopped at its budget would start a turn past it.
  return ctx.remote.here(req.agentId, async () => {
    ctx.usage.assertWithinBudget(req.agentId);
    return { bytes: await ctx.agents.typeText(req.agentId, req.text, req.submit) };
  });
}
