// Multi-agent groups: one task fanned out to several agent types, models or prompts, compared,
// one picked. Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import type { UsageFigures } from "./usage.js";
import { z } from "zod";
import { AGGREGATE_MODES, GROUP_KINDS, JOIN_MODES, type DiffStat, type MemberState } from "@pu/core/group";
import { Name, ProjectRoot, Text, req } from "../fields.js";
import type { CleanResult, MergeResult, WorktreeDiff } from "./worktrees.js";

const GroupId = z.string().min(1).max(64);
const VariantKey = z.string().min(1).max(200);

export const GroupRunRequest = req("group_run", {
  projectRoot: ProjectRoot,
  kind: z.enum(GROUP_KINDS),
  /** Delegators: agent types, or `type:model`. */
  agents: z.array(Name.min(1)).min(1).max(100),
  /** Text every member gets (multi_prompt and matrixed put each prompt variant after it). */
  prompt: Text,
  prompts: z.array(Text).max(100).default([]),
  aggregate: z.enum(AGGREGATE_MODES).optional(),
  join: z.enum(JOIN_MODES).optional(),
  quorum: z.number().int().min(1).max(1000).optional(),
  /** The person's own check (typed on their command line, so no trust is asked). */
  gate: z.string().min(1).max(65536).optional(),
  gateTimeoutSeconds: z.number().positive().optional(),
  /** The exit code the gate must end with (default 0; a workflow step's gate may say another). */
  gateExpectExit: z.number().int().min(0).max(255).optional(),
  maxRetries: z.number().int().min(0).max(20).optional(),
  timeoutMinutes: z.number().positive().optional(),
  judge: Name.min(1).optional(),
  /** The branch every member starts from (default: the project's current branch). */
  base: Name.min(1).optional(),
  /** The group's budget: spent, no further member starts and the running ones are interrupted. */
  maxCost: z.number().positive().max(1_000_000).optional(),
  maxTokens: z.number().int().positive().optional(),
  /** Where the members run: `local` (this machine) and hosts' names; members spread over those with room. */
  on: z.array(Name.min(1)).min(1).max(32).optional(),
  /**
   * Sent by a control plane to a host: this group is one member of that plane's group (its id and
   * the member's variant key); `agents` holds the member's one delegator and `prompt` its whole prompt.
   * Asked twice (a plane restarted before the answer), the host answers with the group it made.
   */
  placedMember: z
    .object({
      groupId: GroupId,
      variant: VariantKey,
      /** Set in the member's environment and its gate's (a plan worker's PU_PLAN_ROLE and PU_TASK_ID). */
      env: z.record(z.string().regex(/^PU_[A-Z0-9_]+$/, "a PU_ environment variable name").max(64), z.string().max(4096)).optional(),
      /** Run in this worktree of the host (a ticket's, made by its first step) instead of a new one. */
      worktree: z.string().min(1).max(64).optional(),
    })
    .optional(),
});
export const GroupListRequest = req("group_list", { projectRoot: ProjectRoot });
export const GroupStatusRequest = req("group_status", { projectRoot: ProjectRoot, groupId: GroupId });
export const GroupCancelRequest = req("group_cancel", { projectRoot: ProjectRoot, groupId: GroupId });
export const GroupDiffRequest = req("group_diff", { projectRoot: ProjectRoot, groupId: GroupId, variant: VariantKey, stat: z.boolean().optional() });
export const GroupPickRequest = req("group_pick", {
  projectRoot: ProjectRoot,
  groupId: GroupId,
  /** Default: the group's winner. */
  variant: VariantKey.optional(),
  /** Keep the other members' worktrees. */
  keep: z.boolean().optional(),
  strategy: z.enum(["merge", "squash", "ff-only"]).default("merge"),
});

export interface GroupMemberView {
  variant: string;
  delegator: string;
  agentType: string;
  model: string | null;
  state: MemberState;
  agentId: string | null;
  worktreeId: string | null;
  worktreePath: string | null;
  branch: string | null;
  startedAt: string | null;
  seconds: number | null;
  exitCode: number | null;
  reason: string | null;
  gate: { passed: boolean; exitCode: number | null; attempts: number } | null;
  diff: DiffStat | null;
  output: string | null;
  outputSource: "file" | "screen" | "none" | null;
  /** 1 = the judge's first choice. */
  judgeRank: number | null;
  /** The host it runs on (null: this machine; absent from an older daemon). */
  host?: string | null;
  /** Tokens and cost its agent's CLI recorded (null: no record; absent from an older daemon). */
  usage?: UsageFigures | null;
}

export interface GroupView {
  groupId: string;
  project: string;
  kind: string;
  phase: string;
  /** Empty for a group started by hand. */
  ticketId: string;
  stepName: string;
  createdAt: string;
  finishedAt: string | null;
  aggregate: string;
  join: string;
  quorum: number;
  gate: string | null;
  expectedTotal: number;
  pendingLaunches: number;
  members: GroupMemberView[];
  winner: string | null;
  reasons: string | Record<string, string> | null;
  failureReasons: string[];
  picked: string | null;
  /** The members' outputs side by side (markdown), once the group is complete. */
  aggregatedText: string | null;
}

export interface GroupsResults {
  group_run: GroupView;
  group_list: { groups: GroupView[]; unreadable: string[] };
  group_status: GroupView;
  group_cancel: GroupView;
  group_diff: WorktreeDiff & { variant: string };
  group_pick: { groupId: string; variant: string; merge: MergeResult; clean: CleanResult | null };
}
