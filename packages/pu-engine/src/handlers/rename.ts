import { PuError } from "@pu/core/errors";
import { findAgent } from "@pu/core/manifest";
import { normalizeWorktreeName } from "@pu/core/names";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";
import { validateAgentName } from "@pu/core/names";

/**
 * Renames an agent (free text) or a worktree. A worktree's name is only its display
 * name: its branch keeps the name it was created with.
 */
export async function handleRename(state: EngineState, req: RequestOf<"rename">): Promise<ResultOf<"rename">> {
  const root = await state.project(req.projectRoot);
  return state.updateManifest(root, (m) => {
    const wt = Object.hasOwn(m.worktrees, req.target) ? m.worktrees[req.target] : undefined;
    if (wt) {
      const name = normalizeWorktreeName(req.name);
      const clash = Object.values(m.worktrees).find((w) => w.id !== wt.id && w.name === name && w.status !== "cleaned");
      if (clash) throw new PuError("INVALID_ARGUMENT", `worktree ${clash.id} is already named ${name}`);
      wt.name = name;
      return { target: wt.id, name };
    }
    const found = findAgent(m, req.target);
    if (!found) {
      throw new PuError(req.target.startsWith("wt-") ? "WORKTREE_NOT_FOUND" : "AGENT_NOT_FOUND", `no agent or worktree ${req.target} in ${root}`);
    }
    found.agent.name = validateAgentName(req.name);
    return { target: found.agent.id, name: found.agent.name };
  });
}
