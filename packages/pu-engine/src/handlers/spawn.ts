import type { RequestOf, SpawnResult } from "@pu/ipc/protocol";
import { refuseWhileStopping, type EngineState } from "../state.js";
import { spawnAgent } from "../automation/spawn.js";

/** `queuePaused`: a person's spawn still runs while the queue is paused, and is told so. */
export async function handleSpawn(state: EngineState, req: RequestOf<"spawn">, queuePaused = false): Promise<SpawnResult> {
  refuseWhileStopping(state);
  const root = await state.project(req.projectRoot);
  const { type: _type, id: _id, projectRoot: _root, ...fields } = req;
  const launched = await spawnAgent(state, root, fields);
  const warnings = queuePaused ? [...launched.warnings, "the queue is paused (`pu queue resume`): this spawn runs because you asked for it, but the daemon starts nothing on its own"] : launched.warnings;
  const result: SpawnResult = { agentId: launched.agentId, cwd: launched.cwd, agent: launched.entry, warnings };
  if (launched.worktreeId) result.worktreeId = launched.worktreeId;
  if (launched.worktreePath) result.worktreePath = launched.worktreePath;
  if (launched.branch) result.branch = launched.branch;
  return result;
}
