import type { DiffResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DiffContext = Pick<EngineServices, "state" | "worktrees" | "remote">;

/** Changes of one worktree, or of every active one, against the branch it left. */
export async function handleDiff(ctx: DiffContext, req: RequestOf<"diff">): Promise<DiffResult> {
  const placed = req.worktreeId === undefined ? undefined : await ctx.remote.route(req.worktreeId, "worktree");
  if (placed) return ctx.remote.forward(placed, "diff", { worktreeId: req.worktreeId, ...(req.stat ? { stat: true } : {}) });
  const root = await ctx.state.project(req.projectRoot);
  if (req.worktreeId !== undefined) return ctx.remote.here(req.worktreeId, () => ctx.worktrees.diff(root, req));
  const local = await ctx.worktrees.diff(root, req);
  // Every active worktree means those on hosts too (each host asked once, for the ones pu placed there and has not merged);
  // a record of placements pu cannot read is said, this machine's worktrees diffed all the same.
  const problems = await ctx.remote.unreadPlacements("worktrees on hosts were not diffed");
  if (problems.length > 0) local.problems = problems;
  for (const project of ctx.remote.projectsOf(root)) {
    const active = project.worktreeIds.filter((id) => !project.merged.includes(id));
    if (active.length === 0) continue;
    try {
      const there = await ctx.remote.forward(project, "diff", req.stat ? { stat: true } : {});
      local.worktrees.push(...there.worktrees.filter((w) => active.includes(w.worktreeId)));
    } catch (error) {
      for (const worktreeId of active) local.worktrees.push({ worktreeId, name: worktreeId, branch: "", baseBranch: project.baseBranch, mergeBase: "", files: [], insertions: 0, deletions: 0, error: `on host ${project.host}: ${(error as Error).message}` });
    }
  }
  return local;
}
