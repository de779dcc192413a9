/**
 * What the daemon knows about an agent whose PTY it holds. Types only: the registry
 * creates these, the status watch, launcher, stop and turn read them.
 */
import type { AgentStatus } from "@pu/core/manifest";
import { effectiveStatus } from "@pu/core/status";
import type { AgentSession } from "../agent-session.js";

/** Why the daemon itself is stopping an agent; decides what its exit is recorded as. */
export type StopIntent = "kill" | "suspend" | "shutdown" | "clean";

export interface SessionPlacement {
  agentId: string;
  projectRoot: string;
  worktreeId?: string;
  agentType: string;
  model?: string;
  cwd: string;
  session: AgentSession;
  idleThresholdSeconds: number;
}

/** An agent whose PTY this daemon holds (running, or exited but its output still readable). */
export interface LiveAgent extends SessionPlacement {
  /** Set before the daemon stops the process; undefined when the agent exits on its own. */
  stopIntent?: StopIntent;
  /**
   * The spawn prompt has not been typed in yet. Such an agent sits at its own prompt but
   * has not started its task, so it must not read as waiting (triggers would fire early).
   */
  promptPending?: boolean;
  /** When this process started (ms since the epoch): exit events carry the duration. */
  startedAtMs: number;
  /** Settles once the exit has been written to the manifest (never rejects). */
  exitRecorded: Promise<void>;
  /** Why the exit could not be written to the manifest (e.g. a read-only or full disk), once it failed. */
  exitRecordError?: unknown;
  /** Settles once the request that started the process has written (or abandoned) its manifest entry. */
  entryWritten: Promise<void>;
}

/** Effective status of a session the daemon holds, now. */
export function sessionStatus(live: LiveAgent): AgentStatus {
  const session = live.session;
  if (session.exitCode !== null) {
    // Stopped on purpose to be resumed later: waiting, not broken.
    return live.stopIntent === "suspend" || live.stopIntent === "shutdown" ? "waiting" : "broken";
  }
  if (live.promptPending) return "streaming";
  return effectiveStatus({
    exitCode: null,
    output: session.ring.lastBytes(256),
    idleSeconds: session.activity.idleSeconds(),
    suspended: false,
    idleThresholdSeconds: live.idleThresholdSeconds,
  });
}
