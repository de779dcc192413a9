// Plan sessions: goal → explorers → plan → workers on a task graph → verification.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import type { UsageFigures } from "./usage.js";
import { z } from "zod";
import { ProjectRoot, AgentId, Name, Text, req } from "../fields.js";

const SessionId = z.string().min(1).max(64);

export const PlanStartRequest = req("plan_start", {
  projectRoot: ProjectRoot,
  goal: Text.refine((goal) => goal.trim().length > 0, "the goal must not be empty"),
  maxWorkers: z.number().int().min(0).max(1000).optional(),
  maxIterations: z.number().int().min(1).max(100).optional(),
  skipVerify: z.boolean().optional(),
  planOnly: z.boolean().optional(),
  auto: z.boolean().optional(),
  /** The plan's budget over all its role agents: spent, no further one starts and running ones are interrupted. */
  maxTokens: z.number().int().positive().optional(),
  maxCost: z.number().positive().max(1_000_000).optional(),
  /** Where workers run: `local` (this machine) and hosts' names; each worker goes to the place with room holding the fewest. */
  on: z.array(Name.min(1)).min(1).max(32).optional(),
});
export const PlanListRequest = req("plan_list", { projectRoot: ProjectRoot });
export const PlanStatusRequest = req("plan_status", { projectRoot: ProjectRoot, sessionId: SessionId });
export const PlanApproveRequest = req("plan_approve", { projectRoot: ProjectRoot, sessionId: SessionId });
export const PlanRunRequest = req("plan_run", { projectRoot: ProjectRoot, sessionId: SessionId });
export const PlanCancelRequest = req("plan_cancel", { projectRoot: ProjectRoot, sessionId: SessionId });
export const PlanEvidenceRequest = req("plan_evidence", { projectRoot: ProjectRoot, sessionId: SessionId });
/** A COMPLETE session's integration branch into the branch it started from (or `into`), as `pu merge` merges a worktree. */
export const PlanMergeRequest = req("plan_merge", {
  projectRoot: ProjectRoot,
  sessionId: SessionId,
  strategy: z.enum(["merge", "squash", "ff-only"]).default("merge"),
  message: z.string().max(65536).optional(),
  into: z.string().min(1).max(255).refine((branch) => !branch.startsWith("-"), "a branch name cannot start with '-'").optional(),
});
/** From a plan worker (its PU_AGENT_ID): run CMD in its worktree and record it as evidence. */
export const PlanCheckRequest = req("plan_check", { agentId: AgentId, command: z.string().min(1).max(65536) });

export interface PlanTaskView {
  id: string;
  subject: string;
  status: string;
  blockedBy: string[];
  /** The agent working the task now. */
  worker?: string;
  /** The host its worker runs (or ran) on; absent: this machine. */
  host?: string;
  /** Tokens and cost of the task's workers so far (null: none recorded; absent from an older daemon). */
  usage?: UsageFigures | null;
}

export interface PlanView {
  sessionId: string;
  goal: string;
  phase: string;
  explorationStage: string;
  iteration: number;
  approvedAt: string | null;
  options: { max_workers: number; max_iterations: number; skip_verify: boolean; plan_only: boolean; auto_mode: boolean; max_cost?: number | null; max_tokens?: number | null; on?: string[] | null };
  /** `.pu/plans/<id>/`. */
  dir: string;
  /** The integration branch (`pu/plan-<id>`). */
  branch: string;
  tasks: PlanTaskView[];
  /** Why the session FAILED, from its evidence log; null unless FAILED. */
  failure: string | null;
  /** What is wrong with the task graph on disk now (a cycle, a blockedBy naming no task). */
  problems: string[];
  /** Tokens and cost of its explorers, workers and verifiers so far (null: none recorded; absent from an older daemon). */
  usage?: UsageFigures | null;
}

/** A session `pu plan list` could not read, with the file and what is wrong with it. */
export interface UnreadablePlanView {
  sessionId: string;
  file: string;
  reason: string;
}

export interface PlanEvidenceEntry {
  timestamp: string;
  type: string;
  agent_id?: string | null;
  task_id?: string | null;
  status?: string | null;
  summary?: string | null;
  command?: string | null;
  exit_code?: number | null;
  duration_ms?: number | null;
  output_tail?: string | null;
}

export interface PlanMergeResult {
  sessionId: string;
  /** The integration branch merged (`pu/plan-<id>`). */
  branch: string;
  baseBranch: string;
  strategy: "merge" | "squash" | "ff-only";
  commit?: string;
  /** The base already held the plan's work: nothing was merged. */
  nothingToMerge?: boolean;
}

export interface PlansResults {
  plan_start: PlanView;
  plan_list: { plans: PlanView[]; unreadable: UnreadablePlanView[] };
  /** With the planner's design.md (null before it is written). */
  plan_status: PlanView & { design: string | null };
  plan_approve: PlanView;
  plan_run: PlanView;
  plan_cancel: PlanView;
  plan_evidence: { sessionId: string; evidenceLog: PlanEvidenceEntry[]; tasks: { id: string; evidence: string[] }[] };
  plan_merge: PlanMergeResult;
  plan_check: { sessionId: string; taskId: string; exitCode: number; output: string; durationMs: number };
}
