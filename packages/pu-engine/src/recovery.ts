import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { isWorktreeId } from "@pu/core/ids";
import { listAgents, type Manifest, type WorktreeEntry } from "@pu/core/manifest";
import { worktreesDir } from "@pu/core/paths";
import { isAlive as isAliveStatus } from "@pu/core/status";
import { canResume } from "@pu/core/agent-types";
import { loadConfig, resolveAgentType } from "@pu/core/config";
import { isSameProcess, terminateProcess, terminateProcessGroup } from "./process-info.js";
import { nowIso, type EngineState } from "./state.js";
import { installWorktreeHooks, repointLegacyHooks } from "./git/hooks.js";
import { findOrphanGits, findStrayAgents } from "./stray-agents.js";
import { settleInterruptedMerge } from "./git/merge.js";
import { finishInterruptedCleans } from "./worktrees/clean-worktrees.js";
import { currentBranch, listGitWorktrees } from "./git/runner.js";

export const LOST_ERROR = "lost: the daemon stopped while it was running";

/** Grace for an orphan agent of a dead daemon: it gets SIGTERM first, like any kill. */
const ORPHAN_GRACE_MS = 5000;

async function resumeCommandsOf(state: EngineState, root: string): Promise<(agentType: string) => boolean> {
  try {
    const config = await loadConfig(root);
    return (agentType) => {
      try {
        const type = resolveAgentType(config, agentType);
        return Array.isArray(type.resumeArgs) && type.resumeArgs.length > 0;
      } catch {
        return false;
      }
    };
  } catch (err) {
    state.log.event("recovery_config_unreadable", { projectRoot: root, error: err });
    return () => false;
  }
}

/**
 * Reconciles every known project after a start: agents the manifest calls alive have no
 * PTY in this fresh daemon. Orphaned processes of a dead daemon are stopped (only when
 * pid AND start time match; a reused pid is never touched); each agent becomes suspended
 * when it can be resumed, broken otherwise. Missing or invalid manifests are skipped.
 */
export async function recoverProjects(state: EngineState): Promise<void> {
  for (const root of state.projects.list()) {
    try {
      await recoverProject(state, root);
    } catch (err) {
      state.log.event("recovery_skipped", { projectRoot: root, error: err });
    }
  }
  await stopStrayAgents(state);
}

/**
 * Stops agent processes no manifest accounts for (a spawn or resume cut short by a
 * crash before its entry was written), so a dead daemon never leaves orphans behind.
 */
async function stopStrayAgents(state: EngineState): Promise<void> {
  const strays = findStrayAgents(state.home);
  if (strays.length === 0) return;
  const stopped = await Promise.all(
    strays.map(async ({ pid, agentId, leader }) => ({
      pid,
      agentId,
      leader,
      outcome: leader ? await terminateProcessGroup(pid, { graceMs: ORPHAN_GRACE_MS }) : await terminateProcess(pid, { graceMs: ORPHAN_GRACE_MS }),
    })),
  );
  state.log.event("recovery_strays_stopped", { strays: stopped });
}

/**
 * A spawn cut short by a crash can leave a git worktree (and its pu/ branch) that the
 * manifest never heard of. It is adopted as an active worktree without agents, so the
 * user sees it in `pu status` and decides: spawn into it, merge it, or clean it.
 */
async function adoptUnrecordedWorktrees(state: EngineState, root: string, manifest: Manifest): Promise<void> {
  const dir = worktreesDir(root);
  let names: string[];
  try {
    names = readdirSync(dir).filter(isWorktreeId);
  } catch {
    return; // no worktrees directory yet
  }
  const known = new Set(Object.values(manifest.worktrees).flatMap((wt) => [wt.id, path.resolve(wt.path)]));
  const candidates = names.filter((id) => !known.has(id) && !known.has(path.join(dir, id)));
  if (candidates.length === 0) return;
  const registered = new Map((await listGitWorktrees(root)).map((wt) => [path.resolve(wt.path), wt.branch]));
  // The spawn that made it would have started it from the checked-out branch; merges need one.
  const baseBranch = (await currentBranch(root)) ?? undefined;
  const adopted: WorktreeEntry[] = [];
  for (const id of candidates) {
    const wtPath = path.join(dir, id);
    const branch = registered.get(wtPath);
    // Half-made directories git does not know are left alone (and logged) rather than guessed at.
    if (!branch?.startsWith("pu/")) {
      state.log.event("recovery_unknown_worktree_dir", { projectRoot: root, path: wtPath });
      continue;
    }
    adopted.push({
      id,
      name: branch.slice("pu/".length),
      path: wtPath,
      branch,
      ...(baseBranch ? { baseBranch } : {}),
      status: "active",
      agents: {},
      createdAt: statSync(wtPath).mtime.toISOString(),
    });
  }
  if (adopted.length === 0) return;
  // A crash can come before the hooks went in: without them its pre_commit gates would not run.
  for (const wt of adopted) {
    for (const note of await installWorktreeHooks(state, root, wt.path)) state.log.event("recovery_hooks_note", { projectRoot: root, worktreeId: wt.id, note });
  }
  await state.store.update(root, (m) => {
    for (const wt of adopted) m.worktrees[wt.id] ??= wt;
  });
  state.log.event("recovery_adopted_worktrees", { projectRoot: root, worktrees: adopted.map((wt) => wt.id) });
}

/** How long a start waits for a dead daemon's git (a merge held by a slow hook) before settling. */
const ORPHAN_GIT_WAIT_MS = 15_000;

/**
 * A SIGKILLed daemon's `git merge` runs on as an orphan. Settled under it, the merge would be
 * found with nothing to abort (or aborted), and the orphan would then record it, or leave
 * MERGE_HEAD behind, after recovery. So settling waits for it to end (bounded: a hook that never
 * returns must not hold the daemon's start for good; the wait is logged either way).
 */
async function waitForOrphanGits(state: EngineState, root: string): Promise<void> {
  const dirs = [root, ...(await listGitWorktrees(root)).map((wt) => wt.path)];
  const deadline = Date.now() + ORPHAN_GIT_WAIT_MS;
  let pids = findOrphanGits(state.home, dirs);
  if (pids.length === 0) return;
  const first = pids;
  while (pids.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    pids = findOrphanGits(state.home, dirs);
  }
  state.log.event("recovery_waited_for_git", { projectRoot: root, pids: first, stillRunning: pids });
}

/** Worktrees a dead daemon left `merging`: merged if the base holds the work, else rolled back to active. */
async function settleMerges(state: EngineState, root: string, manifest: Manifest): Promise<void> {
  const merging = Object.values(manifest.worktrees).filter((wt) => wt.status === "merging");
  if (merging.length === 0) return;
  await waitForOrphanGits(state, root);
  const fallbackBase = await currentBranch(root);
  for (const wt of merging) {
    const baseBranch = wt.baseBranch ?? fallbackBase;
    const outcome = baseBranch
      ? await settleInterruptedMerge({ projectRoot: root, branch: wt.branch, baseBranch, worktreesDir: worktreesDir(root) })
      : ({ settled: "rolled_back", aborted: false } as const);
    await state.store.update(root, (m) => {
      const entry = m.worktrees[wt.id];
      if (!entry || entry.status !== "merging") return;
      if (outcome.settled === "merged") {
        entry.status = "merged";
        entry.mergedAt ??= nowIso();
        delete entry.error;
      } else {
        entry.status = "active";
        entry.error = `the daemon stopped during a merge into ${baseBranch ?? "its base"}; nothing was merged${outcome.aborted ? " (the half-done merge was aborted)" : ""}; run pu merge again`;
      }
    });
    state.log.event("recovery_merge_settled", { projectRoot: root, worktreeId: wt.id, ...outcome });
  }
}

async function recoverProject(state: EngineState, root: string): Promise<void> {
  // Read first: a project with nothing to reconcile is not rewritten.
  const manifest = await state.store.read(root);
  await settleMerges(state, root, manifest);
  // A clean cut short would otherwise leave an "active" worktree whose directory or branch is gone.
  await finishInterruptedCleans(state, root, manifest);
  await adoptUnrecordedWorktrees(state, root, manifest);
  // Worktrees an earlier pu pointed at the repository's own .pu/hooks/ (which a clone can fill).
  await repointLegacyHooks(state, root);
  const stale = listAgents(manifest).filter(({ agent }) => isAliveStatus(agent.status) && !agent.suspended);
  if (stale.length === 0) return;

  const orphans: { agentId: string; pid: number; outcome: string }[] = [];
  await Promise.all(
    stale.map(async ({ agent }) => {
      const startTime = agent.pidStartTime;
      if (typeof agent.pid === "number" && typeof startTime === "string" && isSameProcess(agent.pid, startTime)) {
        const outcome = await terminateProcessGroup(agent.pid, { graceMs: ORPHAN_GRACE_MS });
        orphans.push({ agentId: agent.id, pid: agent.pid, outcome });
      }
    }),
  );

  const hasResumeCommand = await resumeCommandsOf(state, root);
  const staleIds = new Set(stale.map(({ agent }) => agent.id));
  const outcome: { agentId: string; became: "suspended" | "broken" }[] = [];
  await state.store.update(root, (m) => {
    const stamp = nowIso();
    for (const { agent } of listAgents(m)) {
      if (!staleIds.has(agent.id) || !isAliveStatus(agent.status) || agent.suspended) continue;
      if (canResume(agent, hasResumeCommand(agent.agentType))) {
        agent.suspended = true;
        agent.suspendedAt = stamp;
        agent.status = "waiting";
        outcome.push({ agentId: agent.id, became: "suspended" });
      } else {
        agent.status = "broken";
        agent.error = LOST_ERROR;
        agent.completedAt = stamp;
        outcome.push({ agentId: agent.id, became: "broken" });
      }
    }
  });
  state.log.event("recovery", { projectRoot: root, orphansStopped: orphans, agents: outcome });
}
