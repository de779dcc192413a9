import type { CleanResult, RequestOf } from "@pu/ipc/protocol";
import { ownedWorkIn, type EngineServices } from "../services.js";

export type CleanContext = Pick<EngineServices, "state" | "worktrees" | "queue" | "groups" | "plans" | "remote">;

export async function handleClean(ctx: CleanContext, req: RequestOf<"clean">): Promise<CleanResult> {
  const placed = req.worktreeId === undefined ? undefined : await ctx.remote.route(req.worktreeId, "worktree");
  if (placed) return ctx.remote.clean(placed, req.worktreeId!, req.force === true);
  const root = await ctx.state.project(req.projectRoot);
  const local = await ctx.remote.here(req.worktreeId ?? "all", () => ctx.worktrees.clean(root, {
    ...(req.worktreeId !== undefined ? { worktreeIds: [req.worktreeId] } : {}),
    ...(req.all !== undefined ? { all: req.all } : {}),
    ...(req.force !== undefined ? { force: req.force } : {}),
    ...(req.callerAgentId !== undefined ? { callerAgentId: req.callerAgentId } : {}),
    owners: () => ownedWorkIn(ctx, root),
  }));
  if (!req.all) return local;
  // Every worktree means those on hosts too: each cleaned or kept by the same rules, a host that cannot be reached kept with why,
  // a record of placements pu cannot read said in one line (this machine's cleaned all the same).
  const problems = await ctx.remote.unreadPlacements("worktrees on hosts were not cleaned");
  if (problems.length > 0) local.problems = problems;
  await ctx.remote.reports(root);
  for (const { project, worktreeId } of ctx.remote.liveWorktrees(root)) {
    try {
      const there = await ctx.remote.clean(project, worktreeId, req.force === true, { keepOnRefusal: true });
      local.cleaned.push(...there.cleaned);
      local.kept.push(...there.kept);
    } catch (error) {
      local.kept.push({ worktreeId, name: worktreeId, reason: `on host ${project.host}: ${(error as Error).message}`, uncommittedFiles: [], unmergedCommits: 0 });
    }
  }
  return local;
}
