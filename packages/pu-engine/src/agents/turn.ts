/**
 * One turn of an agent: type a text into it the way a person would, then wait until it
 * has answered and is waiting again (or exits). Triggers, and the queue's steps, group
 * members and plan roles built on top, all drive agents through this.
 *
 * "Answered" needs output past the point where the typing ended: an agent that still
 * shows its old prompt right after the Enter has not started, let alone finished. The
 * answer is judged each time the status watch reports the agent waiting, and after each
 * burst of output has been quiet for a moment (a fast agent can answer and show its
 * prompt again before the status watch ever sees it streaming).
 */
import { interruptKeysOf, submitPauseMs } from "@pu/core/agent-types";
import type { TurnSignalKind } from "@pu/core/agent-readiness";
import { setLongTimeout } from "@pu/core/long-timeout";
import { deliverPrompt, type DeliverPromptOptions } from "./launch-command.js";
import type { EngineState } from "../state.js";
import { sessionReadiness, sessionStatus, type LiveAgent } from "../session/live-agent.js";

/** After output, it must be quiet this long before "is it waiting?" is asked. */
const REPLY_SETTLE_MS = 150;

export interface TurnResult {
  /**
   * `waiting`: it answered and waits for the next thing. `exited`: the process ended first
   * (or before the text could be typed). `aborted`: the caller's signal. `timed_out`: the
   * caller's time limit passed with the agent still busy.
   */
  outcome: "waiting" | "exited" | "aborted" | "timed_out";
  /** Everything the agent printed during the turn (raw terminal output, as far as the ring still holds it). */
  output: string;
  /** Ring offsets the turn's output spans. */
  fromOffset: number;
  toOffset: number;
  exitCode?: number;
  durationMs: number;
}

export interface TurnOptions {
  signal?: AbortSignal;
  /** Give up waiting for the answer after this long (the agent keeps running). */
  timeoutMs?: number;
  deliver?: DeliverPromptOptions;
}

export interface StartedTurn {
  /** Settles once the text is typed (true) or could not be, the agent having exited (false). */
  typed: Promise<boolean>;
  /** Settles when the turn is over; never rejects. */
  done: Promise<TurnResult>;
}

/** Types `text` into the agent and follows the turn it starts. */
export function startTurn(state: EngineState, live: LiveAgent, text: string, options: TurnOptions = {}): StartedTurn {
  const startedAt = Date.now();
  const typed = deliverPrompt(live.session, text, { submitPauseMs: submitPauseMs(live.agentType), ...options.deliver }).catch((err: unknown) => {
    state.log.event("prompt_delivery_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error: err });
    return false;
  });
  const done = typed.then(async (ok) => {
    if (!ok) return finish(live, "exited", live.session.ring.endOffset, startedAt);
    const stopChecking = checkSubmitTaken(state, live);
    try {
      return await awaitAnswer(state, live, live.session.ring.endOffset, { ...options, startedAt });
    } finally {
      stopChecking();
    }
  });
  return { typed, done };
}

/**
 * How long a CLI with pu's turn hooks may take to signal the start of a typed prompt's turn.
 * Its UserPromptSubmit hook runs before anything else of the turn, so a longer silence (and a
 * screen never seen busy) means the Enter was not taken: a loaded machine can deliver the text
 * and the Enter as one burst (or a CLI still starting reads them from its input queue at once),
 * which such a CLI reads as a paste and keeps in its input box.
 */
const SUBMIT_TAKEN_WITHIN_MS = 5000;
/** An Enter is pressed again only on a screen this still: a CLI still drawing is not ready for keys. */
const RESUBMIT_SCREEN_STILL_MS = 1000;
/** At most this many more Enters for one prompt (an Enter on an empty input box starts nothing). */
const MAX_RESUBMITS = 3;

/**
 * Presses Enter again if the typed prompt's turn has not begun SUBMIT_TAKEN_WITHIN_MS after the
 * last Enter (for a CLI whose turn hooks pu installed; others give no such signal), on a still
 * screen, up to MAX_RESUBMITS times. Never while a permission dialog may be up (an Enter there
 * would answer it), never after an Enter from someone else. Returns the cancel.
 */
function checkSubmitTaken(state: EngineState, live: LiveAgent): () => void {
  if (!live.hooked) return () => undefined;
  const { session } = live;
  const typedAt = session.submittedAt;
  let lastEnterAt = typedAt;
  let resubmits = 0;
  let timer: NodeJS.Timeout | undefined;
  const check = (): void => {
    // Exited, or an Enter came from elsewhere since (a person, a later turn): not ours to repeat.
    if (session.exitCode !== null || session.submittedAt !== lastEnterAt) return;
    const signal = live.turnSignal;
    if (signal && (signal.at >= typedAt || signal.kind === "permission")) return;
    // Asked now: a permission dialog on screen stops it, and a screen busy this very moment
    // counts as the turn begun (the same call records it in busySeenAfter).
    if (sessionReadiness(live).waitingReason === "permission") return;
    if (live.busySeenAfter !== undefined && live.busySeenAfter >= typedAt) return;
    const changedAt = session.screen.lastContentChange ?? 0;
    const stillFor = Date.now() - changedAt;
    if (stillFor < RESUBMIT_SCREEN_STILL_MS) {
      timer = setTimeout(check, RESUBMIT_SCREEN_STILL_MS - stillFor);
      return;
    }
    resubmits++;
    state.log.event("prompt_resubmitted", { projectRoot: live.projectRoot, agentId: live.agentId, afterMs: Date.now() - typedAt, attempt: resubmits });
    session.write("\r");
    lastEnterAt = session.submittedAt;
    if (resubmits < MAX_RESUBMITS) timer = setTimeout(check, SUBMIT_TAKEN_WITHIN_MS);
  };
  timer = setTimeout(check, SUBMIT_TAKEN_WITHIN_MS);
  return () => clearTimeout(timer);
}

/** `startTurn` for callers that only need the end of the turn. */
export function turn(state: EngineState, live: LiveAgent, text: string, options: TurnOptions = {}): Promise<TurnResult> {
  return startTurn(state, live, text, options).done;
}

/**
 * Waits for the answer to something already typed: the agent is waiting again with output
 * past `fromOffset`, or it exited.
 */
export function awaitAnswer(
  state: EngineState,
  live: LiveAgent,
  fromOffset: number,
  options: TurnOptions & { startedAt?: number } = {},
): Promise<TurnResult> {
  const startedAt = options.startedAt ?? Date.now();
  const { session } = live;
  return new Promise<TurnResult>((resolve) => {
    let settleTimer: NodeJS.Timeout | undefined;
    let cancelLimit: (() => void) | undefined;
    const cleanups: (() => void)[] = [];
    let over = false;
    const end = (outcome: TurnResult["outcome"]) => {
      if (over) return;
      over = true;
      clearTimeout(settleTimer);
      cancelLimit?.();
      for (const off of cleanups) off();
      resolve(finish(live, outcome, fromOffset, startedAt));
    };
    const judge = () => {
      if (session.exitCode !== null) return end("exited");
      if (session.ring.endOffset > fromOffset && sessionStatus(live) === "waiting") end("waiting");
    };

    cleanups.push(session.onExit(() => end("exited")));
    cleanups.push(
      session.onOutput(() => {
        clearTimeout(settleTimer);
        settleTimer = setTimeout(judge, REPLY_SETTLE_MS);
      }),
    );
    cleanups.push(
      state.events.on("agent_status", (change) => {
        if (change.agentId === live.agentId && change.to === "waiting") judge();
      }),
    );
    if (options.signal) {
      const onAbort = () => end("aborted");
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener("abort", onAbort, { once: true });
      cleanups.push(() => options.signal?.removeEventListener("abort", onAbort));
    }
    if (options.timeoutMs !== undefined) cancelLimit = setLongTimeout(() => end("timed_out"), options.timeoutMs);
    // It may have answered (and gone quiet) while the typing finished.
    judge();
  });
}

function finish(live: LiveAgent, outcome: TurnResult["outcome"], fromOffset: number, startedAt: number): TurnResult {
  const slice = live.session.ring.read(fromOffset);
  const result: TurnResult = {
    outcome,
    output: slice.data.toString("utf8"),
    fromOffset: slice.offset,
    toOffset: slice.offset + slice.data.length,
    durationMs: Date.now() - startedAt,
  };
  if (live.session.exitCode !== null) result.exitCode = live.session.exitCode;
  return result;
}

/** A turn state heard: from the CLI's own hook (`pu signal`), or from pu when pu ended the turn. */
export function noteTurnSignal(state: EngineState, live: LiveAgent, kind: TurnSignalKind): void {
  live.turnSignal = { kind, at: Date.now() };
  state.events.emit("agent_turn_signal", { live });
}

/** Between interrupt keys, and after the last one before pu says the turn ended. */
const INTERRUPT_KEY_GAP_MS = 150;
const INTERRUPT_SETTLE_MS = 300;

/**
 * Stops the turn in progress the way a person would: the CLI's own interrupt key. A CLI with turn
 * hooks says nothing when its turn is interrupted (Claude runs no Stop hook then): pu ended the
 * turn, so pu says it ended — a queue step, a group's join and triggers go on.
 */
export function interruptTurn(state: EngineState, live: LiveAgent): void {
  if (live.session.exitCode !== null) return;
  const keys = interruptKeysOf(live.agentType);
  keys.forEach((key, i) => setTimeout(() => live.session.exitCode === null && live.session.write(key), i * INTERRUPT_KEY_GAP_MS));
  if (!live.hooked) return;
  setTimeout(() => {
    if (live.session.exitCode === null) noteTurnSignal(state, live, "turn_end");
  }, keys.length * INTERRUPT_KEY_GAP_MS + INTERRUPT_SETTLE_MS);
}

/** The turn, or `timed_out` once `timeoutMs` has passed with the agent still at it (it keeps running). */
export function withTurnTimeLimit(turnDone: Promise<TurnResult>, timeoutMs: number | undefined): Promise<TurnResult> {
  if (timeoutMs === undefined) return turnDone;
  let cancel: (() => void) | undefined;
  const limit = new Promise<TurnResult>((resolve) => {
    cancel = setLongTimeout(() => resolve({ outcome: "timed_out", output: "", fromOffset: 0, toOffset: 0, durationMs: timeoutMs }), timeoutMs);
  });
  return Promise.race([turnDone, limit]).finally(() => cancel?.());
}

/** The last `count` non-blank lines of the agent's screen, once its model has caught up with the output. */
export async function lastScreenLines(live: LiveAgent, count: number): Promise<string> {
  await live.session.screen.settle().catch(() => undefined);
  return live.session.screen
    .rows()
    .map((row) => row.trimEnd())
    .filter((row) => row.trim() !== "")
    .slice(-count)
    .join("\n");
}
