// The work queue: tickets, the queue itself (pause, caps, collections), reviews, usage stats.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import type { AgentState, CompletedTicket, ProjectLlmStats } from "@pu/core/operator-state";
import type { Ticket, TicketFrontmatter, TicketState } from "@pu/core/ticket";
import { AgentId, Name, ProjectRoot, Text, req } from "../fields.js";

const TicketId = z.string().min(1).max(64);
const Priority = z.enum(["P0", "P1", "P2", "P3"]);

export const TicketCreateRequest = req("ticket_create", {
  projectRoot: ProjectRoot,
  title: z.string().min(1).max(200),
  ticketType: z.string().min(1).max(16),
  priority: Priority.optional(),
  description: Text.optional(),
  agent: Name.optional(),
  model: Name.optional(),
  /** The ticket's budget over all its steps: crossed, its agent's turn is interrupted and the ticket waits for a decision. */
  maxCost: z.number().positive().max(1_000_000).optional(),
  maxTokens: z.number().int().positive().optional(),
  /** Set by the CLI inside a pu agent (PU_AGENT_ID): the ticket is that agent's ticket's output. */
  callerAgentId: AgentId.optional(),
});
export const TicketListRequest = req("ticket_list", {
  projectRoot: ProjectRoot,
  state: z.enum(["queue", "in-progress", "done"]).optional(),
});
export const TicketShowRequest = req("ticket_show", { projectRoot: ProjectRoot, ticketId: TicketId });
export const TicketCancelRequest = req("ticket_cancel", { projectRoot: ProjectRoot, ticketId: TicketId });
export const QueueStatusRequest = req("queue_status", { projectRoot: ProjectRoot.optional() });
export const QueuePauseRequest = req("queue_pause", {});
export const QueueResumeRequest = req("queue_resume", {});
export const QueueCollectionRequest = req("queue_collection", { projectRoot: ProjectRoot, name: Name.optional() });
export const ReviewListRequest = req("review_list", { projectRoot: ProjectRoot.optional() });
export const ReviewApproveRequest = req("review_approve", { projectRoot: ProjectRoot, ticketId: TicketId, note: Text.optional() });
export const ReviewRejectRequest = req("review_reject", {
  projectRoot: ProjectRoot,
  ticketId: TicketId,
  reason: Text.min(1),
  step: Name.optional(),
});
export const StatsRequest = req("stats", { projectRoot: ProjectRoot });
export const StatsPreferRequest = req("stats_prefer", { projectRoot: ProjectRoot, tool: Name.min(1), model: Name.optional() });

export type TicketView = Ticket & { state: TicketState; path: string };
/** A ticket in a list: no body (`pu ticket show` has it), so a list of large tickets fits a reply. */
export type TicketSummary = TicketFrontmatter & { state: TicketState; path: string };

/** A ticket file the queue could not read: it stays where it is, the queue goes on. */
export interface TicketProblem {
  file: string;
  message: string;
}

export interface QueueStatus {
  paused: boolean;
  maxParallel: number;
  slotsUsed: number;
  slotsFree: number;
  /** Tickets being worked, with their step and agent (state.json's agents). */
  running: AgentState[];
  /** Queued tickets in dispatch order. */
  waiting: (TicketSummary & { project: string })[];
  problems: TicketProblem[];
  /** Set when `$PU_HOME/state.json` cannot be read: the queue stands still until it is fixed. */
  stateError?: string;
  /** Set when `$PU_HOME/config.yaml` cannot be used: the queue stands still until it is fixed (and resumed). */
  configError?: string;
  /** Settings that are read but have no effect where they are (a project's `queue.maxParallel`). */
  warnings: string[];
}

export interface ReviewItem {
  ticketId: string;
  project: string;
  step: string | null;
  reviewState: string | null;
  lastMessage: string | null;
  agentId: string | null;
  worktreePath: string | null;
}

export interface StatsRow {
  tool: string;
  model: string;
  runs: number;
  successes: number;
  failures: number;
  totalSeconds: number;
  lastUsed: string;
  /** Tokens the runs' CLIs recorded (input, cache, output), and their cost; null when none recorded. */
  tokens: number | null;
  costUsd: number | null;
}

export interface QueueResults {
  ticket_create: { ticket: TicketView; outputOf?: string; warnings: string[] };
  ticket_list: { tickets: TicketSummary[]; problems: TicketProblem[] };
  ticket_show: { ticket: TicketView; agent?: AgentState; completed?: CompletedTicket };
  ticket_cancel: { ticketId: string; stoppedAgents: string[]; worktreePath?: string };
  queue_status: QueueStatus;
  queue_pause: { paused: boolean };
  queue_resume: { paused: boolean };
  queue_collection: { project: string; collection: string };
  review_list: { reviews: ReviewItem[] };
  review_approve: { ticketId: string; step: string | null };
  review_reject: { ticketId: string; step: string };
  stats: { project: string; stats: ProjectLlmStats | null; rows: StatsRow[] };
  stats_prefer: { project: string; preferredTool: string; preferredModel: string | null };
}
