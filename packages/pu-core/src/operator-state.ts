// `$PU_HOME/state.json`: the work queue's state, field for field as the Operator seed spells it
// (spec/operator-state-schema.txt, snake_case). Optional fields are `T | null` there: absent and
// null both read as "not set". Unknown keys are kept, so a newer writer's fields survive us.
import { z } from "zod";
import { parseJsonText } from "./json-state.js";

const nullable = <T extends z.ZodType>(schema: T) => schema.nullish();
const Count = z.number().int().min(0);

export const AgentStateSchema = z.looseObject({
  id: z.string(),
  ticket_id: z.string(),
  ticket_type: z.string(),
  project: z.string(),
  status: z.string(),
  started_at: z.string(),
  last_activity: z.string(),
  last_message: nullable(z.string()),
  paired: z.boolean(),
  session_name: nullable(z.string()),
  session_wrapper: nullable(z.string()),
  session_window_ref: nullable(z.string()),
  session_context_ref: nullable(z.string()),
  session_pane_ref: nullable(z.string()),
  content_hash: nullable(z.string()),
  current_step: nullable(z.string()),
  step_started_at: nullable(z.string()),
  last_content_change: nullable(z.string()),
  pr_url: nullable(z.string()),
  pr_number: nullable(z.number().int()),
  github_repo: nullable(z.string()),
  pr_status: nullable(z.string()),
  completed_steps: z.array(z.string()).optional(),
  llm_tool: nullable(z.string()),
  llm_model: nullable(z.string()),
  launch_mode: nullable(z.string()),
  review_state: nullable(z.string()),
  dev_server_pid: nullable(z.number().int()),
  worktree_path: nullable(z.string()),
  /** pu's: the host the ticket runs on (`queue.hosts`); absent: this machine. */
  host: nullable(z.string()),
  /**
   * pu's: the current step's group of one on that host, keyed so a restarted daemon finds it again,
   * with the budget it was given there (what the ticket's earlier steps left, or the step's own).
   */
  host_step: nullable(
    z.object({ step: z.string(), key: z.string(), group_id: nullable(z.string()), max_cost: nullable(z.number()), max_tokens: nullable(z.number()) }),
  ),
  /** pu's: every agent the ticket's steps ran on that host so far (each step has its own), whose usage its budget counts. */
  host_agents: nullable(z.array(z.string())),
  /**
   * pu's: what a reviewer's reject asked (`pu review reject --reason`), typed before the prompt of
   * the step it sent the ticket back to each time that step runs, until it is done — so a step run
   * again after a restart still gets it. Absent when nothing is asked.
   */
  rework_request: nullable(z.string()),
});
export type AgentState = z.infer<typeof AgentStateSchema>;

export const CompletedTicketSchema = z.looseObject({
  ticket_id: z.string(),
  ticket_type: z.string(),
  project: z.string(),
  summary: z.string(),
  completed_at: z.string(),
  pr_url: nullable(z.string()),
  output_tickets: z.array(z.string()),
});
export type CompletedTicket = z.infer<typeof CompletedTicketSchema>;

/**
 * Tokens the agents' CLIs recorded (pu's usage readers), summed over the runs that left a record,
 * and their cost in US dollars over the runs whose models have a price (`cost_unknown_count` the
 * others): optional fields beside the counts, so older files and readers are unaffected.
 */
const TOKEN_STATS = {
  input_tokens: Count.optional(),
  output_tokens: Count.optional(),
  cache_read_tokens: Count.optional(),
  cache_write_tokens: Count.optional(),
  cost_usd: z.number().min(0).optional(),
  cost_unknown_count: Count.optional(),
};

export const LlmModelUsageSchema = z.looseObject({
  model: z.string(),
  ticket_count: Count.optional(),
  success_count: Count.optional(),
  failure_count: Count.optional(),
  total_time_secs: Count.optional(),
  ...TOKEN_STATS,
});
export type LlmModelUsage = z.infer<typeof LlmModelUsageSchema>;

export const LlmToolUsageSchema = z.looseObject({
  tool: z.string(),
  ticket_count: Count.optional(),
  success_count: Count.optional(),
  failure_count: Count.optional(),
  total_time_secs: Count.optional(),
  ...TOKEN_STATS,
  last_used: z.string(),
  model_usage: z.record(z.string(), LlmModelUsageSchema).optional(),
});
export type LlmToolUsage = z.infer<typeof LlmToolUsageSchema>;

export const ProjectLlmStatsSchema = z.looseObject({
  project: z.string(),
  preferred_tool: nullable(z.string()),
  preferred_model: nullable(z.string()),
  tool_usage: z.record(z.string(), LlmToolUsageSchema).optional(),
  updated_at: z.string(),
});
export type ProjectLlmStats = z.infer<typeof ProjectLlmStatsSchema>;

/** The seed names the type without listing its values; these are the phases pu drives a group through. */
export const MULTI_AGENT_PHASES = ["launching", "running", "aggregating", "complete", "failed", "cancelled"] as const;
export const MultiAgentPhaseSchema = z.enum(MULTI_AGENT_PHASES);

export const PendingSubAgentSchema = z.looseObject({
  delegator_name: z.string(),
  prompt: z.string(),
  variant_key: z.string(),
});
export type PendingSubAgent = z.infer<typeof PendingSubAgentSchema>;

export const MultiAgentGroupSchema = z.looseObject({
  group_id: z.string(),
  ticket_id: z.string(),
  step_name: z.string(),
  step_type: z.enum(["multi_model", "multi_prompt", "matrixed"]),
  agent_ids: z.array(z.string()),
  // The seed names the field without listing its values: a phase pu does not drive (another
  // tool's) makes that one group unreadable to pu (GroupRecordSchema, per group), never the file.
  phase: z.string(),
  individual_outputs: z.record(z.string(), z.unknown()).optional(),
  aggregated_output: z.record(z.string(), z.unknown()).nullish(),
  expected_total: Count.optional(),
  pending_launches: z.array(PendingSubAgentSchema).optional(),
  agent_variant_keys: z.record(z.string(), z.string()).optional(),
});
export type MultiAgentGroup = z.infer<typeof MultiAgentGroupSchema>;

export const OperatorStateSchema = z.looseObject({
  paused: z.boolean(),
  agents: z.array(AgentStateSchema),
  completed: z.array(CompletedTicketSchema),
  project_llm_stats: z.record(z.string(), ProjectLlmStatsSchema).optional(),
  project_collection_prefs: z.record(z.string(), z.string()).optional(),
  multi_agent_groups: z.array(MultiAgentGroupSchema).optional(),
});
export type OperatorState = z.infer<typeof OperatorStateSchema>;

export function emptyOperatorState(): OperatorState {
  return { paused: false, agents: [], completed: [], project_llm_stats: {}, project_collection_prefs: {}, multi_agent_groups: [] };
}

/** A corrupt state file is INVALID_STATE naming the file and every bad field; the caller never overwrites it. */
export function parseOperatorState(text: string, filePath: string): OperatorState {
  return parseJsonText(OperatorStateSchema, text, filePath, "INVALID_STATE");
}

export function serializeOperatorState(state: OperatorState): string {
  return `${JSON.stringify(state, null, 2)}\n`;
}

/** One agent exit, as usage statistics count it. */
export interface UsageRecord {
  project: string;
  /** Agent type (`claude`, `codex`, a custom type…). */
  tool: string;
  /** `--model`, else the configured default, else "default". */
  model: string;
  succeeded: boolean;
  seconds: number;
  at: Date;
  /** What the run's CLI recorded using; absent when it left no record (unknown, not 0). */
  tokens?: { input: number; output: number; cacheRead: number; cacheWrite: number; costUsd: number | null };
}

/**
 * Adds one exit to `project_llm_stats` (in place): runs (`ticket_count`), successes, failures
 * and whole seconds per project → tool → model, with `last_used` and `updated_at`.
 */
export function recordUsage(state: OperatorState, usage: UsageRecord): void {
  const at = usage.at.toISOString();
  const seconds = Math.max(0, Math.round(usage.seconds));
  const stats = (state.project_llm_stats ??= {});
  const project = (stats[usage.project] ??= { project: usage.project, updated_at: at });
  project.updated_at = at;
  const tools = (project.tool_usage ??= {});
  const tool = (tools[usage.tool] ??= { tool: usage.tool, last_used: at });
  tool.last_used = at;
  const models = (tool.model_usage ??= {});
  const model = (models[usage.model] ??= { model: usage.model });
  for (const counts of [tool, model]) {
    counts.ticket_count = (counts.ticket_count ?? 0) + 1;
    if (usage.succeeded) counts.success_count = (counts.success_count ?? 0) + 1;
    else counts.failure_count = (counts.failure_count ?? 0) + 1;
    counts.total_time_secs = (counts.total_time_secs ?? 0) + seconds;
    const tokens = usage.tokens;
    if (!tokens) continue;
    counts.input_tokens = (counts.input_tokens ?? 0) + tokens.input;
    counts.output_tokens = (counts.output_tokens ?? 0) + tokens.output;
    counts.cache_read_tokens = (counts.cache_read_tokens ?? 0) + tokens.cacheRead;
    counts.cache_write_tokens = (counts.cache_write_tokens ?? 0) + tokens.cacheWrite;
    if (tokens.costUsd === null) counts.cost_unknown_count = (counts.cost_unknown_count ?? 0) + 1;
    else counts.cost_usd = (counts.cost_usd ?? 0) + tokens.costUsd;
  }
}
