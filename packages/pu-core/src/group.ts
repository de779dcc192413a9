// Multi-agent groups (issue 13): one task fanned out to several agent types, models or
// prompts. The record lives in `state.json`'s `multi_agent_groups` with the seed's fields;
// pu's own fields (settings, per-member launch records, results) sit beside them in
// snake_case. This module holds the pure rules: which members a group has and under which
// variant keys, when its join fires, who wins, and what a judge's verdict must look like.
import { z } from "zod";
import { FLAG_LIKE_MESSAGE, isFlagLike } from "./argv-value.js";
import { PuError } from "./errors.js";
import { MultiAgentGroupSchema, MultiAgentPhaseSchema, type MultiAgentGroup, type PendingSubAgent } from "./operator-state.js";

export const GROUP_KINDS = ["multi_model", "multi_prompt", "matrixed"] as const;
export type GroupKind = (typeof GROUP_KINDS)[number];
export const AGGREGATE_MODES = ["collect", "gate", "judge"] as const;
export type AggregateMode = (typeof AGGREGATE_MODES)[number];
export const JOIN_MODES = ["all", "first"] as const;
export type JoinMode = (typeof JOIN_MODES)[number];
export const MEMBER_STATES = ["pending", "running", "done", "failed", "cancelled"] as const;
export type MemberState = (typeof MEMBER_STATES)[number];
export const TERMINAL_GROUP_PHASES = ["complete", "failed", "cancelled"] as const;

/** A delegator names an agent type, optionally with a model: `codex` or `codex:gpt-5`. */
export interface Delegator {
  agentType: string;
  model?: string;
}

const AGENT_TYPE_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

export function parseDelegator(name: string): Delegator {
  const colon = name.indexOf(":");
  const agentType = colon < 0 ? name : name.slice(0, colon);
  const model = colon < 0 ? undefined : name.slice(colon + 1);
  if (!AGENT_TYPE_NAME.test(agentType)) throw new PuError("INVALID_ARGUMENT", `"${name}" does not name an agent type (expected TYPE or TYPE:MODEL)`);
  if (model !== undefined && (model === "" || /\s/.test(model))) throw new PuError("INVALID_ARGUMENT", `"${name}": the model after ":" must be one word`);
  if (model !== undefined && isFlagLike(model)) throw new PuError("INVALID_ARGUMENT", `"${name}": the model after ":" ${FLAG_LIKE_MESSAGE}`);
  return model === undefined ? { agentType } : { agentType, model };
}

export interface GroupPlanInput {
  kind: GroupKind;
  delegators: readonly string[];
  /** Text every member gets first (may be empty when the prompts say everything). */
  sharedPrompt: string;
  /** One per prompt variant (multi_prompt, matrixed); multi_model uses none. */
  prompts: readonly string[];
}

function joinPrompt(shared: string, variant: string | undefined): string {
  return [shared.trim(), variant?.trim() ?? ""].filter((p) => p !== "").join("\n\n");
}

/** The group's members as pending launches, with the seed's variant keys. */
export function planGroupMembers(input: GroupPlanInput): PendingSubAgent[] {
  const { kind, delegators, sharedPrompt, prompts } = input;
  for (const d of delegators) parseDelegator(d);
  const duplicate = delegators.find((d, i) => delegators.indexOf(d) !== i);
  if (duplicate !== undefined) throw new PuError("INVALID_ARGUMENT", `agent ${duplicate} is listed twice; give it a different model (TYPE:MODEL) to run it twice`);
  if (delegators.length === 0) throw new PuError("INVALID_ARGUMENT", "a group needs at least one agent");
  switch (kind) {
    case "multi_model": {
      if (prompts.length > 0) throw new PuError("INVALID_ARGUMENT", "multi_model gives every agent the same prompt; several prompts make it multi_prompt or matrixed");
      if (sharedPrompt.trim() === "") throw new PuError("INVALID_ARGUMENT", "the group's prompt is empty");
      if (delegators.length < 2) throw new PuError("INVALID_ARGUMENT", "multi_model needs at least two agents (--agents a,b)");
      return delegators.map((d) => ({ delegator_name: d, prompt: sharedPrompt.trim(), variant_key: d }));
    }
    case "multi_prompt": {
      if (delegators.length !== 1) throw new PuError("INVALID_ARGUMENT", "multi_prompt runs one agent type with several prompts; several agents make it matrixed");
      if (prompts.length < 2) throw new PuError("INVALID_ARGUMENT", "multi_prompt needs at least two prompts");
      const delegator = delegators[0] as string;
      return prompts.map((p, i) => ({ delegator_name: delegator, prompt: joinPrompt(sharedPrompt, p), variant_key: String(i) }));
    }
    case "matrixed": {
      if (prompts.length < 1) throw new PuError("INVALID_ARGUMENT", "matrixed needs at least one prompt");
      if (delegators.length * prompts.length < 2) throw new PuError("INVALID_ARGUMENT", "matrixed needs at least two members (agents × prompts)");
      return delegators.flatMap((d) => prompts.map((p, i) => ({ delegator_name: d, prompt: joinPrompt(sharedPrompt, p), variant_key: `${d}:${i}` })));
    }
  }
}

export const GroupGateSchema = z.object({
  run: z.string().min(1),
  expect_exit: z.number().int().default(0),
  timeout_seconds: z.number().positive().default(600),
});

/** How a group runs and ends (pu's field `settings`). */
export const GroupSettingsSchema = z.looseObject({
  aggregate: z.enum(AGGREGATE_MODES).default("collect"),
  join: z.enum(JOIN_MODES).default("all"),
  quorum: z.number().int().min(1).default(1),
  gate: GroupGateSchema.nullish(),
  /** Fix-and-retry turns a member gets when the gate fails. */
  max_retries: z.number().int().min(0).max(20).default(0),
  timeout_minutes: z.number().positive().nullish(),
  /** The judge's agent type (aggregate judge). */
  judge_agent: z.string().nullish(),
  /** Members share this worktree (a read-only workflow step) instead of getting their own. */
  shared_worktree: z.string().nullish(),
  /** The branch every member's worktree starts from. */
  base_branch: z.string().nullish(),
  /** The group's budget over all its members (USD, and tokens: all the provider reported). */
  max_cost: z.number().positive().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  /** Where members run: `local` (this machine) and hosts' names, spread in turn (absent: here only). */
  hosts: z.array(z.string()).nullish(),
  /** This group runs one member of a group a control plane placed on this host: that group and member. */
  placed_by: z.object({ group_id: z.string(), variant: z.string(), env: z.record(z.string(), z.string()).nullish() }).nullish(),
});
export type GroupSettings = z.infer<typeof GroupSettingsSchema>;

/** Where a launched member runs (pu's field `members`, per variant key). */
export const GroupMemberSchema = z.looseObject({
  delegator_name: z.string(),
  /** The member's whole prompt (as in its pending launch), kept to start it again after a restart. */
  prompt: z.string(),
  agent_id: z.string().nullish(),
  worktree_id: z.string().nullish(),
  worktree_path: z.string().nullish(),
  branch: z.string().nullish(),
  started_at: z.string().nullish(),
  /** The number of the member's turn (1 = its prompt; more are gate fixes). */
  attempts: z.number().int().min(0).default(0),
  /** The host it runs on (absent: this machine); the host's daemon runs it as a group of its own. */
  host: z.string().nullish(),
  /** That group's id on the host. */
  host_group_id: z.string().nullish(),
});
export type GroupMember = z.infer<typeof GroupMemberSchema>;

export const DiffStatSchema = z.object({ files: z.number().int(), insertions: z.number().int(), deletions: z.number().int() });
export type DiffStat = z.infer<typeof DiffStatSchema>;

/** What a finished member left (`individual_outputs[variant]`). */
export const MemberResultSchema = z.looseObject({
  state: z.enum(["done", "failed", "cancelled"]),
  output: z.string(),
  /** `file`: the member wrote PU_OUTPUT_FILE; `screen`: its last screen lines. */
  output_source: z.enum(["file", "screen", "none"]),
  reason: z.string().nullish(),
  exit_code: z.number().int().nullish(),
  seconds: z.number().min(0),
  finished_at: z.string(),
  gate: z.object({ passed: z.boolean(), exit_code: z.number().int().nullish(), attempts: z.number().int() }).nullish(),
  diff: DiffStatSchema.nullish(),
});
export type MemberResult = z.infer<typeof MemberResultSchema>;

export const JudgeVerdictSchema = z.object({
  winner: z.string().min(1),
  ranking: z.array(z.string()).min(1),
  reasons: z.union([z.string(), z.record(z.string(), z.string())]),
});
export type JudgeVerdict = z.infer<typeof JudgeVerdictSchema>;

/** The group record as pu reads it: the seed's fields plus pu's (a group another tool wrote fails this and is left alone). */
export const GroupRecordSchema = MultiAgentGroupSchema.extend({
  phase: MultiAgentPhaseSchema,
  project: z.string().min(1),
  created_at: z.string(),
  finished_at: z.string().nullish(),
  settings: GroupSettingsSchema,
  members: z.record(z.string(), GroupMemberSchema),
  individual_outputs: z.record(z.string(), MemberResultSchema).optional(),
  failure_reasons: z.array(z.string()).optional(),
  picked: z.object({ variant_key: z.string(), worktree_id: z.string().nullable(), at: z.string() }).nullish(),
});
export type GroupRecord = z.infer<typeof GroupRecordSchema>;

export function isGroupFinished(group: Pick<MultiAgentGroup, "phase">): boolean {
  return (TERMINAL_GROUP_PHASES as readonly string[]).includes(group.phase);
}

export function memberState(group: GroupRecord, variant: string): MemberState {
  const result = group.individual_outputs?.[variant];
  if (result) return result.state;
  const member = group.members[variant];
  // A member on a host runs once the host made its group there, before the host names its agent.
  return member?.agent_id || member?.host_group_id ? "running" : "pending";
}

export function variantKeys(group: GroupRecord): string[] {
  return Object.keys(group.members);
}

/** The join: `all` waits for every member; `first` fires at the first member done. */
export function joinReady(group: GroupRecord): boolean {
  const states = variantKeys(group).map((v) => memberState(group, v));
  if (group.settings.join === "first" && states.includes("done")) return true;
  return states.every((s) => s === "done" || s === "failed" || s === "cancelled");
}

function changeSize(result: MemberResult): number {
  return (result.diff?.insertions ?? 0) + (result.diff?.deletions ?? 0);
}

/** aggregate gate: the passing member with the smallest change; ties go to the first to finish. */
export function gateWinner(group: GroupRecord): string | undefined {
  const passing = Object.entries(group.individual_outputs ?? {}).filter(([, r]) => r.state === "done" && r.gate?.passed === true);
  passing.sort(([, a], [, b]) => changeSize(a) - changeSize(b) || a.finished_at.localeCompare(b.finished_at));
  return passing[0]?.[0];
}

/**
 * Validates a judge's verdict against the group: JSON in the schema, a winner that is a member
 * that finished its work, a ranking of members only. The message says what to fix.
 */
export function parseJudgeVerdict(text: string, doneVariants: readonly string[], allVariants: readonly string[]): JudgeVerdict {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new PuError("INVALID_ARGUMENT", `the verdict is not JSON (${(err as Error).message})`);
  }
  const parsed = JudgeVerdictSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PuError("INVALID_ARGUMENT", `the verdict does not match {winner, ranking, reasons}: ${(issue?.path ?? []).join(".") || "(top level)"}: ${issue?.message ?? "invalid"}`);
  }
  const verdict = parsed.data;
  if (!doneVariants.includes(verdict.winner)) {
    throw new PuError("INVALID_ARGUMENT", `the verdict's winner "${verdict.winner}" is not a member that finished (${doneVariants.join(", ") || "none"})`);
  }
  const unknown = verdict.ranking.filter((v) => !allVariants.includes(v));
  if (unknown.length > 0) throw new PuError("INVALID_ARGUMENT", `the verdict's ranking names unknown members: ${unknown.join(", ")}`);
  return verdict;
}

/** A variant key as a file or worktree name part (`codex:gpt-5:1` → `codex-gpt-5-1`). */
export function variantSlug(variant: string): string {
  return variant.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "member";
}

/** The markdown a ticket's next step (and `pu group status`) gets: every output, the winner first. */
export function aggregatedText(group: GroupRecord): string | null {
  const aggregated = group.aggregated_output;
  if (!aggregated) return null;
  const winner = typeof aggregated.winner === "string" ? aggregated.winner : null;
  const outputs = (aggregated.outputs ?? {}) as Record<string, string>;
  const order = [...Object.keys(outputs)].sort((a, b) => (a === winner ? -1 : b === winner ? 1 : 0));
  const lines = [`Group ${group.group_id} (${group.step_type}, aggregate ${group.settings.aggregate}): ${order.length} member(s) done${winner ? `; winner ${winner}` : ""}.`, ""];
  for (const v of order) lines.push(`## ${v}${v === winner ? " (winner)" : ""}`, "", outputs[v] || "(no output)", "");
  return lines.join("\n").trimEnd();
}
