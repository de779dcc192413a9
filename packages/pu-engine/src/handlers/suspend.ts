import type { RequestOf, SuspendResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type SuspendContext = Pick<EngineServices, "state" | "agents" | "remote">;

/** `pu bench`: stops agents so they can be resumed later; nothing about them is forgotten. */
export async function handleSuspend(ctx: SuspendContext, req: RequestOf<"suspend">): Promise<SuspendResult> {
  const placed = await ctx.remote.route(req.target, "either");
  if (placed) return ctx.remote.forward(placed, "suspend", { target: req.target });
  const root = await ctx.state.project(req.projectRoot);
  const local = await ctx.remote.here(req.target, () => ctx.agents.suspend(root, req));
  if (req.target !== "all") return local;
  // Every agent of the project means those placed on hosts too, as for kill all: a host that cannot
  // be reached says so, and so does a record of placements pu cannot read.
  const problems = await ctx.remote.unreadPlacements("agents on hosts were not benched");
  if (problems.length > 0) local.problems = problems;
  for (const project of ctx.remote.projectsOf(root)) {
    try {
      const there = await ctx.remote.forward(project, "suspend", { target: "all" });
      local.suspended.push(...there.suspended.filter((id) => project.agentIds.includes(id)));
      local.skipped.push(...there.skipped.filter((s) => project.agentIds.includes(s.agentId)));
    } catch (error) {
      for (const agentId of project.agentIds) local.skipped.push({ agentId, reason: `on host ${project.host}: ${(error as Error).message}` });
    }
  }
  return local;
}
