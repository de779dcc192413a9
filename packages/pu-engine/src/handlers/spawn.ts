import type { RequestOf, SpawnResult } from "@pu/ipc/protocol";
import { refuseWhileStopping, type EngineState } from "../state.js";
import { spawnAgent } from "../workflows/spawn.js";

export async function handleSpawn(state: EngineState, req: RequestOf<"spawn">): Promise<SpawnResult> {
  refuseWhileStopping(state);
  const root = await state.project(req.projectRoot);
  const { type: _type, id: _id, projectRoot: _root, ...fields } = req;
  const launched = await spawnAgent(state, root, fields);
  const result: SpawnResult = { agentId: launched.agentId, cwd: launched.cwd, agent: launched.entry, warnings: launched.warnings };
  if (launched.worktreeId) result.worktreeId = launched.worktreeId;
  if (launched.worktreePath) result.worktreePath = launched.worktreePath;
  if (launched.branch) result.branch = launched.branch;
  return result;
}
