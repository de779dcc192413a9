import type { CleanResult, RequestOf } from "@pu/ipc/protocol";
import { cleanWorktrees } from "../git/clean-worktrees.js";
import type { EngineState } from "../state.js";

export async function handleClean(state: EngineState, req: RequestOf<"clean">): Promise<CleanResult> {
  const root = await state.project(req.projectRoot);
  return cleanWorktrees(state, root, {
    ...(req.worktreeId !== undefined ? { worktreeIds: [req.worktreeId] } : {}),
    ...(req.all !== undefined ? { all: req.all } : {}),
    ...(req.force !== undefined ? { force: req.force } : {}),
    ...(req.callerAgentId !== undefined ? { callerAgentId: req.callerAgentId } : {}),
  });
}
