/**
 * Starts a swarm: `worktreeCount` worktrees named from `worktreeTemplate`, each with the
 * roster (`quantity` agents per entry, named by role) and a terminal when asked. A
 * failure is reported and the rest goes on; what did start is kept.
 */
import { loadDefinition, swarmWorktreeNames } from "@pu/core/definitions";
import { isPuError, type ErrorCode } from "@pu/core/errors";
import type { RunSwarmResult } from "@pu/ipc/protocol";
import { agentIn, type EngineState } from "../state.js";
import { agentDefinitionSpawnFields, definitionScopes, type SpawnFields } from "./definitions.js";
import { spawnAgent } from "./spawn.js";

export async function runSwarm(
  state: EngineState,
  root: string,
  name: string,
  vars: Record<string, string> | undefined,
): Promise<RunSwarmResult> {
  const { parsed: swarm } = await loadDefinition("swarm", name, definitionScopes(state, root));
  const result: RunSwarmResult = { spawned: [], failed: [] };
  const members: { role: string; agentDef: string }[] = [];
  for (const entry of swarm.roster) {
    for (let i = 0; i < entry.quantity; i++) members.push({ role: entry.role, agentDef: entry.agentDef });
  }
  if (swarm.includeTerminal) members.push({ role: "terminal", agentDef: "" });

  for (const worktreeName of swarmWorktreeNames(swarm)) {
    // The first agent that starts creates the worktree; the others join it.
    let worktreeId: string | undefined;
    for (const member of members) {
      try {
        const fields: SpawnFields = member.agentDef
          ? await agentDefinitionSpawnFields(state, root, member.agentDef, vars)
          : { agent: "terminal" };
        const placed: SpawnFields = worktreeId ? { ...fields, worktree: worktreeId, name: member.role } : { ...fields, name: worktreeName };
        const spawned = await spawnAgent(state, root, placed);
        if (!worktreeId) {
          worktreeId = spawned.worktreeId;
          // A new worktree's first agent is named after its type; in a swarm the role names it.
          await state.updateManifest(root, (m) => {
            agentIn(m, spawned.agentId).agent.name = member.role;
          });
        }
        result.spawned.push({ agentId: spawned.agentId, worktreeId: spawned.worktreeId, role: member.role, agentDef: member.agentDef });
      } catch (err) {
        const code: ErrorCode = isPuError(err) ? err.code : "INTERNAL";
        result.failed.push({ role: member.role, agentDef: member.agentDef, code, message: `${worktreeName}: ${(err as Error).message}` });
      }
    }
  }
  state.log.event("swarm", { projectRoot: root, swarm: name, spawned: result.spawned.length, failed: result.failed.length });
  return result;
}
