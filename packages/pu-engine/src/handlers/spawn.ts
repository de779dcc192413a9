import type { RequestOf, SpawnResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type SpawnContext = Pick<EngineServices, "state" | "automation" | "queue" | "remote" | "usage">;

/** A person's spawn still runs while the queue is paused, and is told so. */
export async function handleSpawn(ctx: SpawnContext, req: RequestOf<"spawn">): Promise<SpawnResult> {
  const root = await ctx.state.project(req.projectRoot);
  const { type: _type, id: _id, projectRoot: _root, on, maxTokens, maxCost, ...fields } = req;
  // On a host, the host's daemon keeps and enforces the budget: a dropped link stops nothing there.
  if (on !== undefined) return ctx.remote.spawn(root, on, { ...fields, ...(maxTokens !== undefined ? { maxTokens } : {}), ...(maxCost !== undefined ? { maxCost } : {}) });
  const launched = await ctx.automation.spawn(root, fields);
  if (maxTokens !== undefined || maxCost !== undefined) await ctx.usage.setBudget(root, launched.agentId, { maxTokens, maxCost }, launched.entry);
  const warnings = ctx.queue.paused ? [...launched.warnings, "the queue is paused (`pu queue resume`): this spawn runs because you asked for it, but the daemon starts nothing on its own"] : launched.warnings;
  const result: SpawnResult = { agentId: launched.agentId, cwd: launched.cwd, agent: launched.entry, warnings };
  if (launched.worktreeId) result.worktreeId = launched.worktreeId;
  if (launched.worktreePath) result.worktreePath = launched.worktreePath;
  if (launched.branch) result.branch = launched.branch;
  return result;
}
