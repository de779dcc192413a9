/**
 * What the queue's parts share about a ticket being worked: its run, the outcome of a step,
 * and the small rules about reviews and decisions.
 */
import { access, realpath } from "node:fs/promises";
import path from "node:path";
import type { AgentState } from "@pu/core/operator-state";
import type { Workflow } from "@pu/core/workflow";
import type { LiveAgent } from "../../session/live-agent.js";

/** Completed records kept in state.json (the newest). */
export const COMPLETED_KEPT = 200;
/** How much gate output a fix request quotes. */
/** How a ticket ended: the last event of its history, and what its completed record's summary says. */
export type TicketEnding = "done" | "failed" | "cancelled";

/**
 * The summary a completed record keeps for an ending other than done ("done" keeps the agent's
 * own summary). The record has no field for the ending (the Operator schema's), so a restart that
 * finds a record without the ending in the ticket's history reads it back with endingOf.
 */
export function endingSummary(ending: Exclude<TicketEnding, "done">, message: string): string {
  return ending === "cancelled" ? "cancelled" : `failed: ${message}`;
}

export function endingOf(record: { summary: string }): TicketEnding {
  if (record.summary === "cancelled") return "cancelled";
  return record.summary.startsWith("failed: ") ? "failed" : "done";
}

export const FIX_OUTPUT_BYTES = 2000;

/** `last_message` of a ticket that waits for `pu review approve|reject` without a review state (a gate out of retries). */
export const NEEDS_DECISION = "needs a decision:";

/** A review, or a gate out of retries: `pu review approve|reject` decides (a timeout notice is not asked a question). */
export function waitsForDecision(agentState: AgentState): boolean {
  return agentState.status === "awaiting_input" && (agentState.review_state != null || agentState.last_message?.startsWith(NEEDS_DECISION) === true);
}

export const REVIEW_STATES = { plan: "pending_plan", visual: "pending_visual", pr: "pending_pr_creation" } as const;

export type Decision = { kind: "approve"; note?: string } | { kind: "reject"; reason: string; step?: string };

export interface TicketRun {
  root: string;
  ticketId: string;
  abort: AbortController;
  workflow: Workflow;
  live?: LiveAgent;
  /** Set while the ticket waits for a person (`pu review approve|reject`). */
  decide?: (decision: Decision) => void;
  /** A decision that came before the ticket was waiting again (just after a restart). */
  pending?: Decision;
  finished?: boolean;
}

export function runKey(root: string, ticketId: string): string {
  return `${root}\0${ticketId}`;
}

export async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** Where `file` really is when that is outside `dir` (a symlink out of the worktree); undefined when it is inside. */
export async function resolvesOutside(dir: string, file: string): Promise<string | undefined> {
  const [realDir, realFile] = await Promise.all([realpath(dir), realpath(file)]);
  const relative = path.relative(realDir, realFile);
  return relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative) ? realFile : undefined;
}

/** A ticket changed by hand while it was worked: nothing more of it is typed. */
export function editedSinceTrusted(ticketId: string): StepOutcome {
  return { kind: "failed", message: `ticket ${ticketId} was edited by hand since it was trusted, so none of it is typed any more; read it, run \`pu trust\` and queue it again` };
}

/** What marks a `last_message` of a ticket whose next step waits on an unreadable trust.json. */
const TRUST_FILE_WAIT = "has not started: trust.json cannot be read:";

/**
 * `last_message` of a ticket whose step waits because trust.json cannot be read: nothing can tell
 * whether its text was edited by hand, so nothing is typed and nothing fails; a person fixes the
 * file and approves, and the step runs (checked again).
 */
export function trustFileWaitMessage(ticketId: string, step: string, problem: string): string {
  return `${NEEDS_DECISION} step ${step} ${TRUST_FILE_WAIT} ${problem} (fix the file, then \`pu review approve ${ticketId}\`)`;
}

/** Whether the ticket waits on an unreadable trust.json before its current step (which has not run: approving runs it). */
export function waitsForTrustFile(agentState: AgentState | undefined): boolean {
  return agentState?.last_message?.startsWith(NEEDS_DECISION) === true && agentState.last_message.includes(TRUST_FILE_WAIT);
}

export type StepOutcome =
  | { kind: "done"; note?: string }
  | { kind: "reject"; reason: string; step?: string }
  | { kind: "failed"; message: string }
  | { kind: "stopped" };

