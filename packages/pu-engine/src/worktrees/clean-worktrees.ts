// Worktrees removed with their agents, never with work at risk unless forced (pu clean, pu group pick).
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import type { Manifest, WorktreeEntry } from "@pu/core/manifest";
import { isAlive } from "@pu/core/status";
import { worktreesDir } from "@pu/core/paths";
import type { CleanResult } from "@pu/ipc/protocol";
import type { LiveAgent } from "../session/live-agent.js";
import { ownedNote, type OwnedWork } from "../agents/owners.js";
import { dropSession } from "../agents/registry.js";
import { stopAgents } from "../agents/stop.js";
import { describeWorkAtRisk, removeWorktree, workAtRisk, type WorkAtRisk } from "../git/worktree.js";
import { revParse } from "../git/runner.js";
import { nowIso, worktreeIn, type EngineState } from "../state.js";

/**
 * Written on a worktree's entry (as the engine's own `cleaning` field: the statuses are the
 * spec's, so none is added) once the clean has been allowed and just before git removes the
 * directory and branch; the `cleaned` mark drops it. A daemon that dies in between leaves it
 * behind, and the next start finishes that clean (finishInterruptedCleans) instead of showing a
 * worktree whose directory or branch is gone as usable.
 */
interface CleanIntent {
  startedAt: string;
  /** The branch's commit when the clean was allowed (null: no branch), so recovery discards no later commit. */
  branchCommit: string | null;
}

type EntryWithIntent = WorktreeEntry & { cleaning?: CleanIntent };

function cleanIntentOf(wt: WorktreeEntry): CleanIntent | undefined {
  const intent = (wt as EntryWithIntent).cleaning;
  return intent !== null && typeof intent === "object" ? intent : undefined;
}

/** The entry of a removed worktree: cleaned, no intent left, its agents (all stopped by now) broken. */
function markCleaned(entry: WorktreeEntry): void {
  entry.status = "cleaned";
  delete (entry as EntryWithIntent).cleaning;
  const stamp = nowIso();
  for (const agent of Object.values(entry.agents)) {
    if (isAlive(agent.status) || agent.suspended) {
      agent.status = "broken";
      agent.completedAt ??= stamp;
      delete agent.suspended;
      delete agent.suspendedAt;
    }
  }
}

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
    const intent: CleanIntent = { startedAt: nowIso(), branchCommit: await revParse(root, `refs/heads/${wt.branch}`) };
    await state.updateManifest(root, (fresh) => {
      const entry = fresh.worktrees[wt.id];
      if (entry) (entry as EntryWithIntent).cleaning = intent;
    });
    let removed: Awaited<ReturnType<typeof removeWorktree>>;
    try {
      removed = await removeWorktree({ projectRoot: root, worktreesDir: worktreesDir(root), path: wt.path, branch: wt.branch });
    } catch (err) {
      // Refused (a path outside pu's directory): nothing was removed, so there is nothing to finish.
      await state.updateManifest(root, (fresh) => {
        const entry = fresh.worktrees[wt.id];
        if (entry) delete (entry as EntryWithIntent).cleaning;
      });
      throw err;
    }
    notes.push(...removed.notes);
    await state.updateManifest(root, (fresh) => {
      const entry = fresh.worktrees[wt.id];
      if (entry) markCleaned(entry);
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

/**
 * Daemon start: finishes every clean a dead daemon began (a worktree still carrying its
 * `cleaning` intent). That clean had already been allowed (nothing at risk, or --force), and git
 * may have removed the directory and not yet the branch, or neither: what is left is removed and
 * the worktree marked cleaned, as the person asked. The one thing it never judged is a commit
 * made on the branch since; then nothing more is removed, the branch is kept and the entry says
 * why, so the work stays in pu's hands (pu merge, or pu clean again).
 */
export async function finishInterruptedCleans(state: EngineState, root: string, manifest: Manifest): Promise<void> {
  for (const wt of Object.values(manifest.worktrees)) {
    const intent = cleanIntentOf(wt);
    if (!intent) continue;
    const head = await revParse(root, `refs/heads/${wt.branch}`);
    if (head !== null && head !== intent.branchCommit) {
      await state.updateManifest(root, (fresh) => {
        const entry = fresh.worktrees[wt.id];
        if (!entry) return;
        delete (entry as EntryWithIntent).cleaning;
        entry.error = `the daemon stopped while cleaning ${wt.id}; ${wt.branch} gained commits since, so it was kept (its directory may be gone); merge it or run pu clean again`;
      });
      state.log.event("recovery_clean_kept", { projectRoot: root, worktreeId: wt.id, branch: wt.branch, head, branchCommit: intent.branchCommit });
      continue;
    }
    try {
      const removed = await removeWorktree({ projectRoot: root, worktreesDir: worktreesDir(root), path: wt.path, branch: wt.branch, deleteBranch: head !== null });
      await state.updateManifest(root, (fresh) => {
        const entry = fresh.worktrees[wt.id];
        if (entry) markCleaned(entry);
      });
      state.log.event("recovery_clean_finished", { projectRoot: root, worktreeId: wt.id, ...removed });
    } catch (err) {
      await state.updateManifest(root, (fresh) => {
        const entry = fresh.worktrees[wt.id];
        if (!entry) return;
        delete (entry as EntryWithIntent).cleaning;
        entry.error = `the daemon stopped while cleaning ${wt.id}, and finishing it failed: ${(err as Error).message}; run pu clean again`;
      });
      state.log.event("recovery_clean_failed", { projectRoot: root, worktreeId: wt.id, error: err });
    }
  }
}
