/**
 * The sessions the daemon holds: registering a freshly started process, recording its
 * exit in the manifest, letting it go, and finding it for a request.
 */
import { PuError } from "@pu/core/errors";
import { findAgent, listAgents, type AgentEntry } from "@pu/core/manifest";
import { nowIso, type EngineState } from "../state.js";
import type { LiveAgent, SessionPlacement } from "../session/live-agent.js";

/**
 * Takes ownership of a freshly started session: it becomes visible to logs/attach/status,
 * its status is watched, and its exit is recorded in the manifest. Call `entryReady()`
 * once the manifest holds the agent's entry (or will never hold it).
 */
export function registerSession(state: EngineState, placement: SessionPlacement): { live: LiveAgent; entryReady: () => void } {
  let entryReady!: () => void;
  const entryWritten = new Promise<void>((resolve) => (entryReady = resolve));
  const live: LiveAgent = { ...placement, startedAtMs: Date.now(), entryWritten, exitRecorded: Promise.resolve() };
  live.exitRecorded = new Promise<void>((resolve) => {
    live.session.onExit((exitCode) => {
      void recordExit(state, live, exitCode).finally(resolve);
    });
  });
  if (state.sessions.has(live.agentId)) state.events.emit("agent_released", { agentId: live.agentId });
  state.sessions.set(live.agentId, live);
  state.events.emit("agent_registered", { live });
  return { live, entryReady };
}

/** Forgets a session (its ring included): after clean, a second kill, or a resume replacing it. */
export function dropSession(state: EngineState, agentId: string): void {
  if (!state.sessions.delete(agentId)) return;
  state.events.emit("agent_released", { agentId });
}

/**
 * Writes an exit to the manifest. A stop for suspend/shutdown keeps the agent resumable
 * (suspended, waiting); anything else (its own exit, kill, clean) makes it broken.
 */
async function recordExit(state: EngineState, live: LiveAgent, exitCode: number): Promise<void> {
  await live.entryWritten;
  state.log.event("exit", { projectRoot: live.projectRoot, agentId: live.agentId, exitCode, intent: live.stopIntent ?? "natural" });
  const written = await writeExit(state, live, exitCode);
  state.events.emit("agent_exit", {
    projectRoot: live.projectRoot,
    agentId: live.agentId,
    exitCode,
    durationMs: Date.now() - live.startedAtMs,
    agentType: live.agentType,
    ...(live.model !== undefined ? { model: live.model } : {}),
    ...(live.stopIntent !== undefined ? { intent: live.stopIntent } : {}),
    ...(live.finishedBy !== undefined ? { finishedBy: live.finishedBy } : {}),
  });
  if (written) return;
  // The disk may come back (read-only remount undone, space freed): keep trying, more and
  // more slowly, so the manifest stops calling a dead process alive without a restart.
  // Live status meanwhile comes from the process itself (see status-watch).
  let delayMs = EXIT_RECORD_RETRY_FIRST_MS;
  const retry = () => {
    if (state.stopping || state.sessions.get(live.agentId) !== live) return;
    void writeExit(state, live, exitCode).then((ok) => {
      if (ok) {
        live.exitRecordError = undefined;
        state.log.event("exit_recorded_on_retry", { projectRoot: live.projectRoot, agentId: live.agentId });
        return;
      }
      delayMs = Math.min(delayMs * 2, EXIT_RECORD_RETRY_MAX_MS);
      setTimeout(retry, delayMs).unref();
    });
  };
  setTimeout(retry, delayMs).unref();
}

const EXIT_RECORD_RETRY_FIRST_MS = 1000;
const EXIT_RECORD_RETRY_MAX_MS = 60_000;

/** One attempt at writing an exit; false (with `exitRecordError` set) when the manifest cannot be written. */
async function writeExit(state: EngineState, live: LiveAgent, exitCode: number): Promise<boolean> {
  const intent = live.stopIntent;
  const suspended = intent === "suspend" || intent === "shutdown";
  try {
    await state.updateManifest(live.projectRoot, (m) => {
      const found = findAgent(m, live.agentId);
      if (!found) return;
      const agent = found.agent;
      // A newer process (resume) may own the entry by now; its pid differs.
      if (agent.pid !== undefined && agent.pid !== live.session.pid) return;
      const stamp = nowIso();
      if (suspended) {
        agent.status = "waiting";
        agent.suspended = true;
        agent.suspendedAt = stamp;
        delete agent.exitCode;
        delete agent.completedAt;
        delete agent.finishedBy;
      } else {
        agent.status = "broken";
        agent.exitCode = exitCode;
        agent.completedAt = stamp;
        delete agent.suspended;
        delete agent.suspendedAt;
        // Stopped by pu after its work was done: the exit code is that stop's, not a failure.
        if (live.finishedBy !== undefined && intent === "kill") agent.finishedBy = live.finishedBy;
        else delete agent.finishedBy;
      }
    });
  } catch (err) {
    live.exitRecordError = err;
    state.log.event("exit_record_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error: err });
    return false;
  }
  return true;
}

/** Which known project's manifest holds `agentId` (for requests that carry no projectRoot). */
async function locateAgent(state: EngineState, agentId: string): Promise<AgentEntry | undefined> {
  for (const root of state.projects.list()) {
    try {
      const found = listAgents(await state.store.read(root)).find(({ agent }) => agent.id === agentId);
      if (found) return found.agent;
    } catch {
      // an unreadable project cannot hold the answer
    }
  }
  return undefined;
}

/** What a request that needs a running process says about a benched agent (`pu play` brings it back). */
export function benchedAgentMessage(agentId: string): string {
  return `${agentId} is benched (suspended); \`pu play ${agentId}\` resumes it`;
}

/**
 * The session holding an agent's output; AGENT_NOT_FOUND saying why when there is none.
 * `explainBenched`: for requests that need the process itself (input), a benched agent whose
 * output the daemon no longer holds is explained as benched, not as missing.
 */
export async function requireSession(state: EngineState, agentId: string, { explainBenched = false } = {}): Promise<LiveAgent> {
  const live = state.sessions.get(agentId);
  if (live) return live;
  const entry = await locateAgent(state, agentId);
  if (entry?.suspended && explainBenched) throw new PuError("INVALID_STATE", benchedAgentMessage(agentId));
  // Its exit recorded, the output of an agent that ended is let go by a second `pu kill`, by
  // `pu clean`, or by a daemon restart: said as it is, not as a restart that did not happen.
  const exited = entry !== undefined && !entry.suspended && entry.exitCode !== undefined;
  if (exited && explainBenched) throw new PuError("INVALID_STATE", `${agentId} has exited (code ${entry.exitCode}); it takes no input`);
  if (exited) throw new PuError("AGENT_NOT_FOUND", `no output held for ${agentId}: it exited (code ${entry.exitCode}) and its output has been let go (a second \`pu kill\`, \`pu clean\` or a daemon restart does that)`);
  if (entry) throw new PuError("AGENT_NOT_FOUND", `no output held for ${agentId} (the daemon has restarted since it ran)`);
  throw new PuError("AGENT_NOT_FOUND", `no agent ${agentId} in any project this daemon knows`);
}
