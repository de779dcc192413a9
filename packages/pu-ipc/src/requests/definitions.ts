// Definitions (templates, agents, swarms, triggers, schedules) and what runs them: swarms, trigger bindings, gates.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import type { TriggerState } from "@pu/core/manifest";
import type { ErrorCode } from "@pu/core/errors";
import { ProjectRoot, AgentId, Name, Vars, Text, Scope, DefinitionKindSchema, req } from "../fields.js";

export const DefinitionListRequest = req("definition_list", {
  projectRoot: ProjectRoot.optional(),
  kind: DefinitionKindSchema,
});
export const DefinitionGetRequest = req("definition_get", {
  projectRoot: ProjectRoot.optional(),
  kind: DefinitionKindSchema,
  name: Name,
});
export const DefinitionSaveRequest = req("definition_save", {
  projectRoot: ProjectRoot.optional(),
  kind: DefinitionKindSchema,
  name: Name,
  scope: Scope.default("local"),
  content: Text, // the file's text (markdown for templates, YAML otherwise); validated before writing
  overwrite: z.boolean().optional(),
});
export const DefinitionDeleteRequest = req("definition_delete", {
  projectRoot: ProjectRoot.optional(),
  kind: DefinitionKindSchema,
  name: Name,
  scope: Scope.optional(),
});
export const RunSwarmRequest = req("run_swarm", { projectRoot: ProjectRoot, name: Name, vars: Vars.optional() });
export const AssignTriggerRequest = req("assign_trigger", {
  projectRoot: ProjectRoot,
  agentId: AgentId,
  trigger: Name,
  vars: Vars.optional(),
});
export const TriggerLogRequest = req("trigger_log", { projectRoot: ProjectRoot, agentId: AgentId });
export const ScheduleEnableRequest = req("schedule_enable", {
  projectRoot: ProjectRoot,
  name: Name,
  enabled: z.boolean(),
});
export const GateRequest = req("gate", {
  projectRoot: ProjectRoot,
  event: z.enum(["pre_commit", "pre_push"]),
  cwd: z.string().min(1).max(4096),
});


export interface DefinitionSummary {
  name: string;
  scope: "local" | "global";
  path: string;
  description?: string;
  /** Problems found while parsing; the definition is listed but unusable. */
  error?: string;
  /** What parsing ignored (unknown keys); the definition is usable. */
  warnings?: string[];
  /** Kind-specific summary fields (schedules: enabled, nextRun, missedRuns...). */
  details?: Record<string, unknown>;
}
export interface DefinitionGetResult {
  name: string;
  scope: "local" | "global";
  path: string;
  content: string;
  parsed: unknown;
  /** Unknown keys and the like: the definition works, but part of it is ignored. */
  warnings: string[];
}
export interface RunSwarmResult {
  spawned: { agentId: string; worktreeId?: string; role: string; agentDef: string }[];
  failed: { role: string; agentDef: string; code: ErrorCode; message: string }[];
}
export interface GateRun {
  agentId: string;
  triggerName: string;
  seqIndex: number;
  command: string;
  exitCode: number | null;
  /** The exit code the gate asks for (`expect_exit`). */
  expectedExit: number;
  /** Exited with expectedExit, in time. */
  passed: boolean;
  timedOut: boolean;
  durationMs: number;
  outputTail: string;
  startedAt: string;
}
export interface GateResult {
  passed: boolean;
  runs: Omit<GateRun, "agentId" | "seqIndex">[];
}

export interface DefinitionsResults {
  definition_list: { definitions: DefinitionSummary[] };
  definition_get: DefinitionGetResult;
  definition_save: { path: string; scope: "local" | "global"; warnings: string[] };
  definition_delete: { path: string };
  run_swarm: RunSwarmResult;
  assign_trigger: { agentId: string; triggerName: string; triggerTotal: number; triggerState: TriggerState };
  trigger_log: { runs: GateRun[] };
  schedule_enable: { name: string; enabled: boolean; nextRun: string | null };
  gate: GateResult;
}
