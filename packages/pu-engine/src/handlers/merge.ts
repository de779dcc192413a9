import type { MergeResult, RequestOf } from "@pu/ipc/protocol";
import { mergeRecordedWorktree } from "../worktrees/merge-recorded.js";
import type { EngineState } from "../state.js";

export async function handleMerge(state: EngineState, req: RequestOf<"merge">): Promise<MergeResult> {
  const root = await state.project(req.projectRoot);
  return mergeRecordedWorktree(state, root, { worktreeId: req.worktreeId, strategy: req.strategy, ...(req.message !== undefined ? { message: req.message } : {}) });
}
