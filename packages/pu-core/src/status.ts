// Live agent status (AL-001): a pure function of the process's exit code, its
// recent output and how long it has been quiet. Nothing here polls.
import type { AgentStatus } from "./manifest.js";

export const DEFAULT_IDLE_THRESHOLD_SECONDS = 30;

/**
 * Why a waiting agent waits: at a shell prompt (`prompt`), its CLI ended a turn (`turn_end`,
 * from a hook or the screen), it asks to be allowed to act (`permission`), it has been quiet
 * past the idle threshold (`idle`), or pu stopped it to be resumed (`suspended`).
 */
export const WAITING_REASONS = ["prompt", "turn_end", "permission", "idle", "suspended"] as const;
export type WaitingReason = (typeof WAITING_REASONS)[number];

/** How much of the output tail is inspected for a shell prompt. */
export const PROMPT_WINDOW_BYTES = 256;

const PROMPT_CHARS = new Set(["$", "%", "#", ">"]);

export interface StatusInputs {
  /** The process's exit code once it has exited; null/undefined while it runs. */
  exitCode?: number | null;
  /** The agent's output buffer (or at least its tail). */
  output: Uint8Array;
  /** Seconds since the last meaningful output. */
  idleSeconds: number;
  suspended?: boolean | null;
  idleThresholdSeconds?: number;
}

/**
 * True when the output ends at a shell prompt: the last 256 bytes, decoded lossily,
 * end (after trailing whitespace is stripped) in `$`, `%`, `#` or `>` and that
 * character was followed by a space in the raw text. So `"$ "` and `"$   \n"`
 * count, while a bare `"$"` or `"price: 5$\n"` does not.
 */
export function endsWithPrompt(output: Uint8Array): boolean {
  const window = output.subarray(Math.max(0, output.length - PROMPT_WINDOW_BYTES));
  // Non-fatal decoding: a character cut at the window start or stray bytes become U+FFFD.
  const text = new TextDecoder("utf-8", { fatal: false }).decode(window);
  const stripped = text.trimEnd();
  const last = stripped.at(-1);
  if (last === undefined || !PROMPT_CHARS.has(last)) return false;
  return text[stripped.length] === " ";
}

export function effectiveStatus(inputs: StatusInputs): AgentStatus {
  const threshold = inputs.idleThresholdSeconds ?? DEFAULT_IDLE_THRESHOLD_SECONDS;
  if (typeof inputs.exitCode === "number") return "broken";
  if (inputs.suspended === true) return "waiting";
  if (endsWithPrompt(inputs.output)) return "waiting";
  if (inputs.idleSeconds > threshold) return "waiting";
  return "streaming";
}

export function isAlive(status: AgentStatus): boolean {
  return status === "streaming" || status === "waiting";
}
