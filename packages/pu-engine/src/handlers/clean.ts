import type { CleanResult, RequestOf } from "@pu/ipc/protocol";
import { cleanWorktrees } from "../worktrees/clean-worktrees.js";
import { ownedWorkIn, type EngineServices } from "../services.js";

export async function handleClean(services: EngineServices, req: RequestOf<"clean">): Promise<CleanResult> {
  const root = await services.state.project(req.projectRoot);
  return cleanWorktrees(services.state, root, {
    ...(req.worktreeId !== undefined ? { worktreeIds: [req.worktreeId] } : {}),
    ...(req.all !== undefined ? { all: req.all } : {}),
    ...(req.force !== undefined ? { force: req.force } : {}),
    ...(req.callerAgentId !== undefined ? { callerAgentId: req.callerAgentId } : {}),
    owners: () => ownedWorkIn(services, root),
  });
}
