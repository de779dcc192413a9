// usage, budget: tokens and cost per agent, ticket, group, plan, model or day; an agent's limits.
import { findAgent } from "@pu/core/manifest";
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type UsageContext = Pick<EngineServices, "state" | "usage">;

export async function handleUsage(ctx: UsageContext, req: RequestOf<"usage">): Promise<ResultOf<"usage">> {
  const root = await ctx.state.project(req.projectRoot);
  return ctx.usage.usage(root, req.by, req.since);
}

export async function handleBudget(ctx: UsageContext, req: RequestOf<"budget">): Promise<ResultOf<"budget">> {
  const root = await ctx.state.project(req.projectRoot);
  if (req.maxTokens === undefined && req.maxCost === undefined) throw new PuError("INVALID_ARGUMENT", "give --max-tokens N and/or --max-cost USD");
  const found = findAgent(await ctx.state.store.read(root), req.agentId);
  if (!found) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.agentId} in ${root}`);
  const view = await ctx.usage.setBudget(root, req.agentId, { maxTokens: req.maxTokens, maxCost: req.maxCost }, found.agent);
  return { agentId: req.agentId, ...view };
}
