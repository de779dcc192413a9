// Usage and budgets: tokens and cost the agent CLIs recorded, rolled up; an agent's limits.
import { z } from "zod";
import { ProjectRoot, AgentId, req } from "../fields.js";

export const USAGE_GROUPINGS = ["agent", "ticket", "group", "plan", "model", "day"] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export const UsageRequest = req("usage", {
  projectRoot: ProjectRoot,
  by: z.enum(USAGE_GROUPINGS).default("agent"),
  /** Only calls on or after this UTC day (YYYY-MM-DD). */
  since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a day as YYYY-MM-DD").optional(),
  /** Only these agents: what a control plane asks a host about the agents it placed there. */
  agentIds: z.array(AgentId).max(100_000).optional(),
});

/** Limits for one agent; a limit left out stays as it was. */
export const BudgetRequest = req("budget", {
  projectRoot: ProjectRoot,
  agentId: AgentId,
  maxTokens: z.number().int().positive().optional(),
  maxCost: z.number().positive().max(1_000_000).optional(),
});

/** Tokens as the provider reported them; `costUsd` is null when a model used has no price. */
export interface UsageFigures {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  calls: number;
  costUsd: number | null;
}

export interface AgentBudgetView {
  maxTokens?: number;
  maxCost?: number;
  /** When pu interrupted the agent for crossing it (absent while under it). */
  exceededAt?: string;
}

/** An agent's usage (null: no record of it was found — unknown, not 0) and budget. */
export interface AgentUsageView {
  usage: UsageFigures | null;
  budget?: AgentBudgetView;
}

export interface UsageRow extends UsageFigures {
  /** What the row groups by: an agent id, ticket, group or plan id, model, or day. */
  key: string;
  /** What a person reads: the agent's name, else the key. */
  label: string;
  agentType?: string;
  /** Agents counted in the row. */
  agents: number;
  /** The host an agent row's agent runs on (absent: this machine). */
  host?: string;
}

export interface UsageResult {
  projectRoot: string;
  by: UsageGrouping;
  since: string | null;
  rows: UsageRow[];
  total: UsageRow;
  /** Agents whose CLI left pu nothing to read (a plain command, a CLI pu has no reader for). */
  unknownAgents: number;
  /**
   * Hosts holding agents of this project that did not answer: their agents are not in the rows
   * (their figures are kept on the host and counted again once it answers).
   */
  unansweredHosts?: string[];
}

export interface UsageResults {
  usage: UsageResult;
  budget: AgentUsageView & { agentId: string };
}
