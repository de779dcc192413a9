// Worktrees removed with their agents, never with work at risk unless forced (pu clean, pu group pick).
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { isAlive } from "@pu/core/status";
import { worktreesDir } from "@pu/core/paths";
import type { CleanResult } from "@pu/ipc/protocol";
import type { LiveAgent } from "../session/live-agent.js";
import { ownedNote, type OwnedWork } from "../agents/owners.js";
import { dropSession } from "../agents/registry.js";
import { stopAgents } from "../agents/stop.js";
import { describeWorkAtRisk, removeWorktree, workAtRisk, type WorkAtRisk } from "../git/worktree.js";
import { nowIso, worktreeIn, type EngineState } from "../state.js";

const NOTHING_AT_RISK: WorkAtRisk = { uncommittedFiles: [], unmergedCommits: 0 };

function isAtRisk(risk: WorkAtRisk): boolean {
  return risk.uncommittedFiles.length > 0 || risk.unmergedCommits > 0;
}

/**
 * Stops worktrees' agents, removes its directory and branch, and marks it cleaned.
 * Uncommitted files or commits the base lacks are never thrown away without `force`: one
 * worktree is refused, `all` keeps such worktrees and lists them; with `force` the reply
 * says what was discarded.
 */
export interface CleanRequest {
  /** Worktree ids or names; ignored with `all`. */
  worktreeIds?: string[];
  /** Every worktree not cleaned yet: one with work at risk is kept and listed, not refused. */
  all?: boolean;
  force?: boolean;
  /** The agent asking (it may not clean the worktree it runs in). */
  callerAgentId?: string;
  /**
   * Who owns what now (a ticket, group or plan): an owned worktree is refused (one) or kept
   * (`all`) unless `force`. Asked per worktree, as it is reached.
   */
  owners?: () => OwnedWork;
}

export async function cleanWorktrees(state: EngineState, root: string, req: CleanRequest): Promise<CleanResult> {
  const m = await state.store.read(root);
  if (!req.all && (req.worktreeIds ?? []).length === 0) throw new PuError("INVALID_ARGUMENT", "clean needs a worktree id or --all");
  const targets = req.all ? Object.values(m.worktrees).filter((w) => w.status !== "cleaned") : (req.worktreeIds ?? []).map((id) => worktreeIn(m, id));
  if (req.callerAgentId) {
    const host = targets.find((w) => Object.hasOwn(w.agents, req.callerAgentId ?? ""));
    if (host) throw new PuError("INVALID_ARGUMENT", `refusing to clean ${host.id}: it hosts the calling agent ${req.callerAgentId}`);
  }

  const force = req.force === true;
  const ignoreUntracked = (await loadConfig(root)).envFiles;
  const cleaned: CleanResult["cleaned"] = [];
  const kept: CleanResult["kept"] = [];
  // One at a time: git serializes worktree changes in one repository anyway.
  for (const wt of targets) {
    const notes: string[] = [];
    if (wt.status === "cleaned") notes.push(`${wt.id} was already cleaned`);
    const riskNow = () =>
      wt.status === "cleaned"
        ? Promise.resolve(NOTHING_AT_RISK)
        : workAtRisk({ projectRoot: root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, ignoreUntracked });
    const keep = (risk: WorkAtRisk, stoppedAgents: string[]) => {
      const what = describeWorkAtRisk(risk);
      const stoppedNote = stoppedAgents.length > 0 ? ` (its agents ${stoppedAgents.join(", ")} were stopped)` : "";
      if (!req.all) {
        throw new PuError(
          "INVALID_STATE",
          `refusing to clean ${wt.id} (${wt.name}): it has ${what}${stoppedNote}; merge or commit that work first, or pass --force to discard it`,
        );
      }
      kept.push({ worktreeId: wt.id, name: wt.name, reason: what + stoppedNote, ...risk });
    };
    const owner = force || wt.status === "cleaned" ? undefined : req.owners?.().worktree(wt);
    if (owner) {
      const note = ownedNote(owner);
      if (!req.all) throw new PuError("INVALID_STATE", `refusing to clean ${wt.id} (${wt.name}): it is ${note}`);
      kept.push({ worktreeId: wt.id, name: wt.name, reason: note, owner: { kind: owner.kind, id: owner.id }, ...NOTHING_AT_RISK });
      continue;
    }
    // Checked before stopping anything, so a refusal leaves the agents running...
    const before = force ? NOTHING_AT_RISK : await riskNow();
    if (isAtRisk(before)) {
      keep(before, []);
      continue;
    }
    const live = Object.keys(wt.agents)
      .map((id) => state.sessions.get(id))
      .filter((a): a is LiveAgent => a !== undefined);
    const { stopped } = await stopAgents(live, "clean");
    // ...and again once they are stopped: they may have written or committed in between.
    const risk = await riskNow();
    if (!force && isAtRisk(risk)) {
      keep(risk, stopped.map((s) => s.agentId));
      continue;
    }
    if (isAtRisk(risk)) notes.push(`discarded ${describeWorkAtRisk(risk)}`);
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
      ...(isAtRisk(risk) ? { discarded: risk } : {}),
    });
    state.log.event("clean", { projectRoot: root, worktreeId: wt.id, killedAgents: stopped.map((s) => s.agentId) });
  }
  return { cleaned, kept };
}
