import { PuError } from "@pu/core/errors";
import { isAlive } from "@pu/core/status";
import { worktreesDir } from "@pu/core/paths";
import type { CleanResult, RequestOf } from "@pu/ipc/protocol";
import { dropSession, nowIso, worktreeIn, type EngineState, type LiveAgent } from "../state.js";
import { removeWorktree } from "../worktrees.js";
import { stopAgents } from "./kill.js";

/** Stops a worktree's agents, removes its directory and branch, and marks it cleaned. */
export async function handleClean(state: EngineState, req: RequestOf<"clean">): Promise<CleanResult> {
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  if (!req.all && !req.worktreeId) throw new PuError("INVALID_ARGUMENT", "clean needs a worktree id or --all");
  const targets = req.all ? Object.values(m.worktrees).filter((w) => w.status !== "cleaned") : [worktreeIn(m, req.worktreeId ?? "")];
  if (req.callerAgentId) {
    const host = targets.find((w) => Object.hasOwn(w.agents, req.callerAgentId ?? ""));
    if (host) throw new PuError("INVALID_ARGUMENT", `refusing to clean ${host.id}: it hosts the calling agent ${req.callerAgentId}`);
  }

  const cleaned: CleanResult["cleaned"] = [];
  // One at a time: git serializes worktree changes in one repository anyway.
  for (const wt of targets) {
    const notes: string[] = [];
    if (wt.status === "cleaned") notes.push(`${wt.id} was already cleaned`);
    const live = Object.keys(wt.agents)
      .map((id) => state.sessions.get(id))
      .filter((a): a is LiveAgent => a !== undefined);
    const { stopped } = await stopAgents(state, live, "clean");
    const removed = await removeWorktree({ projectRoot: root, worktreesDir: worktreesDir(root), path: wt.path, branch: wt.branch });
    notes.push(...removed.notes);
    await state.updateManifest(root, (fresh) => {
      const entry = fresh.worktrees[wt.id];
      if (!entry) return;
      entry.status = "cleaned";
      const stamp = nowIso();
      for (const agent of Object.values(entry.agents)) {
        if (isAlive(agent.status) || agent.suspended) {
          agent.status = "broken";
          agent.completedAt ??= stamp;
          delete agent.suspended;
          delete agent.suspendedAt;
        }
      }
    });
    for (const id of Object.keys(wt.agents)) dropSession(state, id);
    cleaned.push({
      worktreeId: wt.id,
      killedAgents: stopped.map((s) => s.agentId),
      removedPath: removed.removedPath,
      deletedBranch: removed.deletedBranch,
      notes,
    });
    state.log.event("clean", { projectRoot: root, worktreeId: wt.id, killedAgents: stopped.map((s) => s.agentId) });
  }
  return { cleaned };
}
