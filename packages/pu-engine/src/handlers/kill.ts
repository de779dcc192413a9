import type { KillResult, RequestOf } from "@pu/ipc/protocol";
import { ownedWorkIn, type EngineServices } from "../services.js";

export type KillContext = Pick<EngineServices, "state" | "agents" | "queue" | "groups" | "plans" | "remote">;

/** `pu kill`: work a running ticket, group or plan owns is left alone unless --force (or the owner's cancel). */
export async function handleKill(ctx: KillContext, req: RequestOf<"kill">): Promise<KillResult> {
  const placed = await ctx.remote.route(req.target, "either");
  if (placed) return ctx.remote.forward(placed, "kill", { target: req.target, ...(req.force ? { force: true } : {}) });
  const root = await ctx.state.project(req.projectRoot);
  const local = await ctx.remote.here(req.target, () => ctx.agents.kill(root, req, req.force ? undefined : ownedWorkIn(ctx, root)));
  if (req.target !== "all" && req.target !== "worktrees") return local;
  // Every agent of the project means those placed on hosts too; a host that cannot be reached says so,
  // and so does a record of placements pu cannot read (this machine's are killed all the same).
  const problems = await ctx.remote.unreadPlacements("agents on hosts were not killed");
  if (problems.length > 0) local.problems = problems;
  for (const project of ctx.remote.projectsOf(root)) {
    try {
      const there = await ctx.remote.forward(project, "kill", { target: req.target, ...(req.force ? { force: true } : {}) });
      local.killed.push(...there.killed.filter((k) => project.agentIds.includes(k.agentId)));
      local.skipped.push(...there.skipped.filter((k) => project.agentIds.includes(k.agentId)));
    } catch (error) {
      for (const agentId of project.agentIds) local.skipped.push({ agentId, reason: `on host ${project.host}: ${(error as Error).message}` });
    }
  }
  return local;
}
