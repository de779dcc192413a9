/** Stopping agents: the one kill escalation kill, suspend, clean and shutdown share. */
import { isPuError, PuError } from "@pu/core/errors";
import { listAgents, type AgentLocation } from "@pu/core/manifest";
import type { FinishedBy, LiveAgent, StopIntent } from "../session/live-agent.js";
import { nowIso, type EngineState } from "../state.js";

/** SIGTERM → this long → SIGKILL. */
const KILL_GRACE_MS = 5000;

/**
 * Stops running agents in parallel (SIGTERM to the group, grace, SIGKILL) and waits
 * until each exit is in the manifest; `intent` decides how it is recorded.
 */
export async function stopAgents(
  agents: LiveAgent[],
  intent: StopIntent,
  graceMs: number = KILL_GRACE_MS,
): Promise<{ stopped: { agentId: string; exitCode: number }[] }> {
  const running = agents.filter((a) => a.session.exitCode === null);
  const stopped = await Promise.all(
    running.map(async (live) => {
      live.stopIntent = intent;
      const exitCode = await live.session.kill({ graceMs });
      await live.exitRecorded;
      return { agentId: live.agentId, exitCode };
    }),
  );
  return { stopped };
}

/**
 * The agent's work is done: when the daemon stops it next, its exit is recorded with
 * `finishedBy` (shown as finished by pu, not as a failure). An agent already gone is left as it is.
 */
export function markFinished(live: LiveAgent, by: FinishedBy): void {
  if (live.session.exitCode === null) live.finishedBy = by;
}

/**
 * A group or plan started a new agent (`successor`) for work that a benched agent was doing
 * when the daemon stopped: the benched entries `replaced` picks are ended, finished by `by`,
 * with `replacedBy` naming the successor. Left benched, `pu play` would bring back a second
 * agent in the successor's worktree, and status would list the old one as benched for good.
 * Only suspended entries whose process this daemon does not run (or is not resuming) are
 * touched. Returns the ids retired.
 */
export async function retireReplaced(state: EngineState, root: string, replaced: (found: AgentLocation) => boolean, successor: string, by: FinishedBy): Promise<string[]> {
  const benched = (found: AgentLocation) =>
    found.agent.id !== successor && found.agent.suspended === true && replaced(found) && !state.isRunning(found.agent.id) && !state.resuming.has(found.agent.id);
  const retired: string[] = [];
  try {
    // Read first: most starts replace nothing, and those need no manifest write.
    if (!listAgents(await state.store.read(root)).some(benched)) return [];
    await state.updateManifest(root, (m) => {
      for (const found of listAgents(m)) {
        if (!benched(found)) continue;
        const agent = found.agent;
        agent.status = "broken";
        agent.completedAt = nowIso();
        agent.finishedBy = by;
        agent.replacedBy = successor;
        delete agent.suspended;
        delete agent.suspendedAt;
        retired.push(agent.id);
      }
    });
  } catch (error) {
    // The successor runs either way; the old entry stays benched, as before this existed.
    state.log.event("retire_replaced_failed", { projectRoot: root, successor, error });
    return [];
  }
  for (const agentId of retired) state.log.event("agent_replaced", { projectRoot: root, agentId, replacedBy: successor, by });
  return retired;
}

/** Stops agents whose work is done (see markFinished). */
export function stopFinishedAgents(agents: LiveAgent[], by: FinishedBy, graceMs: number = KILL_GRACE_MS): ReturnType<typeof stopAgents> {
  for (const live of agents) markFinished(live, by);
  return stopAgents(agents, "kill", graceMs);
}

/**
 * The processes are gone, but the manifest still calls them alive (it could not be
 * written, e.g. a full or read-only disk): the caller must hear it, not a success.
 */
export function throwIfUnrecorded(stopped: LiveAgent[]): void {
  const unrecorded = stopped.filter((live) => live.exitRecordError !== undefined);
  const cause = unrecorded[0]?.exitRecordError;
  if (cause === undefined) return;
  const ids = unrecorded.map((live) => live.agentId).join(", ");
  const detail = cause instanceof Error ? cause.message : String(cause);
  throw new PuError(isPuError(cause) ? cause.code : "IO_ERROR", `stopped ${ids}, but could not record it in the manifest: ${detail}`, {
    cause,
  });
}
