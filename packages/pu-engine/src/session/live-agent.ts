/**
 * What the daemon knows about an agent whose PTY it holds. Types only: the registry
 * creates these, the status watch, launcher, stop and turn read them.
 */
import type { AgentStatus } from "@pu/core/manifest";
import { agentReadiness, type TurnSignal } from "@pu/core/agent-readiness";
import type { WaitingReason } from "@pu/core/status";
import type { AgentSession } from "./agent-session.js";

/** Why the daemon itself is stopping an agent; decides what its exit is recorded as. */
export type StopIntent = "kill" | "suspend" | "shutdown" | "clean";

/** Which of pu's orchestrators stopped an agent because its part was done (the manifest's `finishedBy`). */
export type FinishedBy = "queue" | "group" | "plan";

export interface SessionPlacement {
  agentId: string;
  projectRoot: string;
  worktreeId?: string;
  agentType: string;
  model?: string;
  cwd: string;
  session: AgentSession;
  idleThresholdSeconds: number;
  /** pu installed the CLI's turn hooks (Claude's): a prompt's turn is signalled when it starts and ends. */
  hooked?: boolean;
}

/** An agent whose PTY this daemon holds (running, or exited but its output still readable). */
export interface LiveAgent extends SessionPlacement {
  /** Set before the daemon stops the process; undefined when the agent exits on its own. */
  stopIntent?: StopIntent;
  /** Set when the agent's work is done and an orchestrator stops it: its exit is recorded as finished, not failed. */
  finishedBy?: FinishedBy;
  /**
   * The spawn prompt has not been typed in yet. Such an agent sits at its own prompt but
   * has not started its task, so it must not read as waiting (triggers would fire early).
   */
  promptPending?: boolean;
  /** The last turn signal the agent's CLI hook sent (`pu signal`). */
  turnSignal?: TurnSignal;
  /** The submit time (session.submittedAt) after which the screen last showed the agent busy. */
  busySeenAfter?: number;
  /** When this process started (ms since the epoch): exit events carry the duration. */
  startedAtMs: number;
  /** Settles once the exit has been written to the manifest (never rejects). */
  exitRecorded: Promise<void>;
  /** Why the exit could not be written to the manifest (e.g. a read-only or full disk), once it failed. */
  exitRecordError?: unknown;
  /** Settles once the request that started the process has written (or abandoned) its manifest entry. */
  entryWritten: Promise<void>;
}

/** Status of a session the daemon holds, now, and why it waits when it does. */
export interface SessionReadiness {
  status: AgentStatus;
  waitingReason?: WaitingReason;
  /** Ask again then (epoch ms): the answer can change without new output. */
  recheckAt?: number;
}

export function sessionReadiness(live: LiveAgent, now: number = Date.now()): SessionReadiness {
  const session = live.session;
  if (session.exitCode !== null) {
    // Stopped on purpose to be resumed later: waiting, not broken.
    return live.stopIntent === "suspend" || live.stopIntent === "shutdown" ? { status: "waiting", waitingReason: "suspended" } : { status: "broken" };
  }
  if (live.promptPending) return { status: "streaming" };
  const submittedAt = session.submittedAt;
  const screen = session.screen;
  const reported = screen.reportedState;
  const readiness = agentReadiness({
    agentType: live.agentType,
    now,
    rows: screen.rows(),
    reportedState: reported ? { state: reported.state, at: reported.at } : null,
    lastContentChange: screen.lastContentChange,
    submittedAt,
    turnSeenSince: live.busySeenAfter !== undefined && live.busySeenAfter >= submittedAt,
    signal: live.turnSignal ?? null,
    hooked: live.hooked === true,
    outputTail: session.ring.lastBytes(256),
    idleSeconds: session.activity.idleSeconds(),
    idleThresholdSeconds: live.idleThresholdSeconds,
  });
  // The submitted turn has visibly begun: from now on its end marker is evidence.
  if (readiness.screenBusy) live.busySeenAfter = submittedAt;
  const result: SessionReadiness = { status: readiness.status };
  if (readiness.waitingReason) result.waitingReason = readiness.waitingReason;
  if (readiness.recheckAt !== undefined) result.recheckAt = readiness.recheckAt;
  return result;
}

/** Effective status of a session the daemon holds, now. */
export function sessionStatus(live: LiveAgent): AgentStatus {
  return sessionReadiness(live).status;
}
