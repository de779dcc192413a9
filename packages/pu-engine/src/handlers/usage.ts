// usage, budget: tokens and cost per agent, ticket, group, plan, model or day; an agent's limits.
import { findAgent } from "@pu/core/manifest";
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";
import { withHostUsage } from "../usage/usage-figures.js";

export type UsageContext = Pick<EngineServices, "state" | "usage" | "remote">;

/** This machine's agents, and those pu placed on hosts as each host counts them. */
export async function handleUsage(ctx: UsageContext, req: RequestOf<"usage">): Promise<ResultOf<"usage">> {
  const root = await ctx.state.project(req.projectRoot);
  const [local, hosts] = await Promise.all([ctx.usage.usage(root, req.by, req.since, req.agentIds), req.agentIds ? [] : ctx.remote.usage(root, req.by, req.since)]);
  return withHostUsage(local, hosts);
}

/** An agent on a host: its limits kept and enforced by the host's daemon, so a dropped link loses no stop. */
export async function handleBudget(ctx: UsageContext, req: RequestOf<"budget">): Promise<ResultOf<"budget">> {
  const root = await ctx.state.project(req.projectRoot);
  if (req.maxTokens === undefined && req.maxCost === undefined) throw new PuError("INVALID_ARGUMENT", "give --max-tokens N and/or --max-cost USD");
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.forward(placed, "budget", { agentId: req.agentId, maxTokens: req.maxTokens, maxCost: req.maxCost });
  const found = await ctx.remote.here(req.agentId, async () => {
    const agent = findAgent(await ctx.state.store.read(root), req.agentId);
    if (!agent) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.agentId} in ${root}`);
    return agent;
  });
  const view = await ctx.usage.setBudget(root, req.agentId, { maxTokens: req.maxTokens, maxCost: req.maxCost }, found.agent);
  return { agentId: req.agentId, ...view };
}
