/**
 * An agent's live status and, when it waits, why: one pure function of what the daemon
 * knows about it at a moment. The sources, strongest first:
 *
 * 1. a turn signal from the CLI's own hook (Claude's Stop / UserPromptSubmit / Notification
 *    hooks call `pu signal`), as long as nothing was submitted after it;
 * 2. the rendered screen read with the agent type's markers (busy, idle, permission; Codex
 *    also reports its state in the stream), with screen stability;
 * 3. the seed rules every program gets: a shell prompt at the end of the output, or quiet
 *    past the idle threshold.
 *
 * The daemon re-asks at `recheckAt` when the answer can change without new output (a screen
 * becoming stable).
 */
import type { AgentStatus } from "./manifest.js";
import { SCREEN_MARKERS, screenReadiness } from "./screen-readiness.js";
import { effectiveStatus, endsWithPrompt, type WaitingReason } from "./status.js";

/** An idle marker counts once the screen has not changed for this long (a redraw can pass through it). */
export const IDLE_MARKER_STABLE_MS = 600;
/**
 * A screen with no marker at all (a welcome screen, an interrupted turn) reads waiting once it
 * has not changed for this long. Busy CLIs animate (spinners, timers), so a still screen is a
 * waiting one; unknown programs never get this rule.
 */
export const QUIET_SCREEN_MS = 2000;
/**
 * For a CLI whose turn hooks pu installed, a prompt's turn is signalled as it starts: a screen
 * that stood still after a submit without that signal is a CLI slow to take the prompt (a
 * loaded machine), not a turn already over, until it has stood this long.
 */
export const HOOKED_QUIET_SCREEN_MS = 15_000;

export type TurnSignalKind = "busy" | "turn_end" | "permission";

export interface TurnSignal {
  kind: TurnSignalKind;
  /** Epoch ms the daemon received it. */
  at: number;
}

export interface ReadinessInputs {
  agentType: string;
  now: number;
  /** The rendered screen's rows (trailing blanks removed). */
  rows: readonly string[];
  /** The program's own state report in the stream (Codex's OSC 7501) and when it arrived. */
  reportedState: { state: string; at: number } | null;
  /** When the visible text last changed (epoch ms); null while nothing was drawn. */
  lastContentChange: number | null;
  /**
   * When input last carried an Enter, or the prompt was given on the command line (epoch ms;
   * 0 for never): a turn may have started then, so evidence older than this is stale.
   */
  submittedAt: number;
  /** Set once the screen showed the turn begun after `submittedAt` (see TurnTracking). */
  turnSeenSince: boolean;
  signal: TurnSignal | null;
  /** pu installed the CLI's turn hooks: a submitted prompt is signalled when its turn starts. */
  hooked?: boolean;
  /** The tail of the raw output (a shell prompt is read off it). */
  outputTail: Uint8Array;
  idleSeconds: number;
  idleThresholdSeconds: number;
}

export interface Readiness {
  status: Exclude<AgentStatus, "broken">;
  waitingReason?: WaitingReason;
  /** The screen showed a busy marker (the caller records that the submitted turn started). */
  screenBusy?: boolean;
  /** Ask again at this time (epoch ms) even if nothing else happens. */
  recheckAt?: number;
}

const waiting = (waitingReason: WaitingReason): Readiness => ({ status: "waiting", waitingReason });

/** Status and waiting reason of a running agent (exited and suspended agents are decided by the caller). */
export function agentReadiness(input: ReadinessInputs): Readiness {
  const { signal, submittedAt } = input;
  if (signal && signal.at >= submittedAt) {
    if (signal.kind === "turn_end") return waiting("turn_end");
    if (signal.kind === "permission") return waiting("permission");
    return { status: "streaming" };
  }
  if (Object.hasOwn(SCREEN_MARKERS, input.agentType)) {
    const fromScreen = readScreen(input);
    if (fromScreen) return fromScreen;
  }
  const status = effectiveStatus({
    exitCode: null,
    output: input.outputTail,
    idleSeconds: input.idleSeconds,
    idleThresholdSeconds: input.idleThresholdSeconds,
  });
  if (status !== "waiting") return { status: "streaming" };
  return waiting(endsWithPrompt(input.outputTail) ? "prompt" : "idle");
}

/**
 * The screen's verdict for a type with markers, or undefined to fall back to the seed rules.
 * After a submit, only evidence newer than it counts: a fresh state report, the turn seen
 * busy, or a screen that changed since and then stood still.
 */
function readScreen(input: ReadinessInputs): Readiness | undefined {
  const { now, submittedAt, turnSeenSince, lastContentChange } = input;
  const reported = input.reportedState && input.reportedState.at >= submittedAt ? input.reportedState.state : null;
  const reading = screenReadiness(input.agentType, { rows: input.rows, reportedState: reported });
  if (reading === "permission") return waiting("permission");
  if (reading === "busy") return { status: "streaming", screenBusy: true };
  if (lastContentChange === null) return undefined;
  const neverSubmitted = submittedAt === 0;
  const changedSinceSubmit = lastContentChange >= submittedAt;
  const settledAfter = (ms: number, reason: WaitingReason): Readiness => {
    const due = lastContentChange + ms;
    return now >= due ? waiting(reason) : { status: "streaming", recheckAt: due };
  };
  if (reading === "idle") {
    if (neverSubmitted || turnSeenSince || reported !== null) return settledAfter(IDLE_MARKER_STABLE_MS, "turn_end");
    // Never seen busy: a turn too quick to catch, or the previous turn's marker still drawn.
    // A screen that changed after the submit and then stood still settles it.
    return changedSinceSubmit ? settledAfter(input.hooked ? HOOKED_QUIET_SCREEN_MS : QUIET_SCREEN_MS, "turn_end") : undefined;
  }
  // No marker at all: a welcome screen, or a turn that ended without one (interrupted).
  // Submitted but never seen busy: the CLI may still be starting (OpenCode takes seconds
  // before its first request), so only the idle threshold decides.
  if (neverSubmitted || turnSeenSince) return settledAfter(QUIET_SCREEN_MS, "idle");
  return undefined;
}
