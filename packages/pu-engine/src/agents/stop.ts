/** Stopping agents: the one kill escalation kill, suspend, clean and shutdown share. */
import { isPuError, PuError } from "@pu/core/errors";
import type { FinishedBy, LiveAgent, StopIntent } from "../session/live-agent.js";

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
