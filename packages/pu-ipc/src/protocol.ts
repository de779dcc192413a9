import { z } from "zod";
import type { AgentEntry, AgentStatus, Manifest, TriggerState, WorktreeEntry } from "@pu/core/manifest";
import type { ErrorCode } from "@pu/core/errors";

// Bumped on any incompatible change to a request, reply or event shape.
export const PROTOCOL_VERSION = 1;
export const DAEMON_VERSION = "0.1.0";

// Terminal bytes travel as msgpack bin; msgpackr decodes bin to Buffer (a Uint8Array).
// z.custom keeps the type as plain Uint8Array, so a Node Buffer is accepted without casts.
const Bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: "expected binary data" });
const Id = z.union([z.number().int(), z.string().max(128)]);
const ProjectRoot = z.string().min(1).max(4096);
const AgentId = z.string().min(1).max(64);
const Name = z.string().max(256);
const Vars = z.record(z.string().max(256), z.string().max(65536));
const Text = z.string().max(4 * 1024 * 1024);
// Any positive size is accepted; the daemon clamps it (see AgentSession.setViewerSize).
const TerminalSide = z.number().int().min(1).max(1_000_000);

export const DEFINITION_KINDS = ["template", "agent", "swarm", "trigger", "schedule"] as const;
export const DefinitionKindSchema = z.enum(DEFINITION_KINDS);
export type DefinitionKind = z.infer<typeof DefinitionKindSchema>;
const Scope = z.enum(["local", "global"]);

function req<T extends string, S extends z.ZodRawShape>(type: T, shape: S) {
  return z.object({ type: z.literal(type), id: Id, ...shape });
}

export const HelloRequest = req("hello", { protocolVersion: z.number().int(), client: z.string().max(256) });
export const HealthRequest = req("health", {});
export const ShutdownRequest = req("shutdown", {});
export const InitRequest = req("init", { projectRoot: ProjectRoot });
export const SpawnRequest = req("spawn", {
  projectRoot: ProjectRoot,
  prompt: Text.optional(),
  agent: Name.optional(),
  name: Name.optional(),
  base: Name.optional(),
  root: z.boolean().optional(),
  worktree: Name.optional(),
  command: Text.optional(),
  template: Name.optional(),
  vars: Vars.optional(),
  planMode: z.boolean().optional(),
  trigger: Name.optional(),
  noTrigger: z.boolean().optional(),
  extraArgs: z.array(z.string().max(65536)).max(256).optional(),
  /** Added to the agent's environment (which is otherwise the daemon's). */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").max(256), z.string().max(65536)).optional(),
  cols: TerminalSide.optional(),
  rows: TerminalSide.optional(),
  // Set by the CLI when it runs inside a pu agent (PU_AGENT_ID); informational.
  callerAgentId: AgentId.optional(),
});
export const StatusRequest = req("status", { projectRoot: ProjectRoot, agentId: AgentId.optional() });
// target: an agent id, a worktree id, "worktrees" (every worktree agent) or "all" (also root agents).
export const KillRequest = req("kill", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64),
  exclude: z.array(AgentId).max(10_000).optional(),
  callerAgentId: AgentId.optional(),
});
// target: an agent id or "all".
export const SuspendRequest = req("suspend", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64),
  callerAgentId: AgentId.optional(),
});
export const ResumeRequest = req("resume", { projectRoot: ProjectRoot, agentId: AgentId });
export const LogsRequest = req("logs", {
  agentId: AgentId,
  tail: z.number().int().min(0).optional(),
  /** The rendered screen (`screen` in the reply) instead of raw bytes. */
  screen: z.boolean().optional(),
});
export const AttachRequest = req("attach", { agentId: AgentId, fromOffset: z.number().int().min(0).optional() });
export const InputRequest = req("input", { agentId: AgentId, data: Bytes });
export const ResizeRequest = req("resize", {
  agentId: AgentId,
  cols: TerminalSide,
  rows: TerminalSide,
});
export const RenameRequest = req("rename", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64), // agent id or worktree id
  name: Name,
});
export const DiffRequest = req("diff", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().max(64).optional(),
  stat: z.boolean().optional(),
});
export const MergeRequest = req("merge", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().min(1).max(64),
  strategy: z.enum(["merge", "squash", "ff-only"]).default("merge"),
  message: z.string().max(65536).optional(),
});
export const CleanRequest = req("clean", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().max(64).optional(),
  all: z.boolean().optional(),
  /** Remove even uncommitted files and commits the base branch lacks (the reply lists them). */
  force: z.boolean().optional(),
  callerAgentId: AgentId.optional(),
});
export const SubscribeStatusRequest = req("subscribe_status", { projectRoot: ProjectRoot });
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
export const TrustRequest = req("trust", {
  projectRoot: ProjectRoot,
  /** List what the project's `.pu/` would run and whether it is trusted, without recording anything. */
  showOnly: z.boolean().optional(),
});

export const RequestSchema = z.discriminatedUnion("type", [
  HelloRequest,
  HealthRequest,
  ShutdownRequest,
  InitRequest,
  SpawnRequest,
  StatusRequest,
  KillRequest,
  SuspendRequest,
  ResumeRequest,
  LogsRequest,
  AttachRequest,
  InputRequest,
  ResizeRequest,
  RenameRequest,
  DiffRequest,
  MergeRequest,
  CleanRequest,
  SubscribeStatusRequest,
  DefinitionListRequest,
  DefinitionGetRequest,
  DefinitionSaveRequest,
  DefinitionDeleteRequest,
  RunSwarmRequest,
  AssignTriggerRequest,
  TriggerLogRequest,
  ScheduleEnableRequest,
  GateRequest,
  TrustRequest,
]);

export type Request = z.infer<typeof RequestSchema>;
export type RequestType = Request["type"];
export type RequestOf<T extends RequestType> = Extract<Request, { type: T }>;
/** What a caller supplies: the request without `type` and `id`, defaults optional. */
export type RequestFields<T extends RequestType> = Omit<z.input<(typeof RequestSchemas)[T]>, "type" | "id">;

export const RequestSchemas = {
  hello: HelloRequest,
  health: HealthRequest,
  shutdown: ShutdownRequest,
  init: InitRequest,
  spawn: SpawnRequest,
  status: StatusRequest,
  kill: KillRequest,
  suspend: SuspendRequest,
  resume: ResumeRequest,
  logs: LogsRequest,
  attach: AttachRequest,
  input: InputRequest,
  resize: ResizeRequest,
  rename: RenameRequest,
  diff: DiffRequest,
  merge: MergeRequest,
  clean: CleanRequest,
  subscribe_status: SubscribeStatusRequest,
  definition_list: DefinitionListRequest,
  definition_get: DefinitionGetRequest,
  definition_save: DefinitionSaveRequest,
  definition_delete: DefinitionDeleteRequest,
  run_swarm: RunSwarmRequest,
  assign_trigger: AssignTriggerRequest,
  trigger_log: TriggerLogRequest,
  schedule_enable: ScheduleEnableRequest,
  gate: GateRequest,
  trust: TrustRequest,
} as const satisfies { [T in RequestType]: z.ZodType };

// ---- results (the `result` of an `ok` reply) ----

/** An agent as `status` reports it: every manifest field, `status` computed live. */
export type AgentView = AgentEntry & {
  /** The last status written to the manifest (status above is the live one). */
  storedStatus: AgentStatus;
  /** Seconds since the last meaningful output; null when the daemon has no live process. */
  idleSeconds: number | null;
  /** The daemon holds this agent's PTY right now. */
  live: boolean;
  worktreeId?: string;
  /** The lowest non-empty row of the agent's rendered screen (while the daemon holds its PTY). */
  lastScreenLine?: string;
  /** A hash of the screen's visible text: equal hashes, same text. */
  contentHash?: string;
  /** When the screen's visible text last changed (ISO time); absent while it never showed any. */
  lastContentChange?: string;
};
// Not Omit<WorktreeEntry, "agents">: the entry type keeps unknown keys (an index
// signature), and Omit over an index signature erases the named fields.
export type WorktreeView = WorktreeEntry & { agents: Record<string, AgentView> };
export interface StatusReport {
  projectRoot: string;
  worktrees: Record<string, WorktreeView>;
  agents: Record<string, AgentView>;
  createdAt: string;
  updatedAt: string;
}

export interface HealthResult {
  pid: number;
  uptimeSeconds: number;
  protocolVersion: number;
  daemonVersion: string;
  home: string;
  agentCount: number;
  liveAgentCount: number;
  projects: string[];
}
export interface HelloAck {
  protocolVersion: number;
  daemonVersion: string;
  pid: number;
}
export interface SpawnResult {
  agentId: string;
  worktreeId?: string;
  worktreePath?: string;
  branch?: string;
  cwd: string;
  agent: AgentEntry;
  /** Non-fatal notes, e.g. template variables that were not supplied. */
  warnings: string[];
}
export interface KillResult {
  killed: { agentId: string; exitCode: number | null }[];
  skipped: { agentId: string; reason: string }[];
  /** With target "worktrees": root agents still running, which only "all" (`--include-root`) stops. */
  rootAgentsLeft?: number;
}
export interface SuspendResult {
  suspended: string[];
  skipped: { agentId: string; reason: string }[];
}
/** An agent's terminal as a person would see it now (`logs` with `screen: true`). */
export interface ScreenView {
  cols: number;
  rows: number;
  /** One string per screen row, top to bottom, trailing blanks removed. */
  lines: string[];
  /** 0-based column and row of the cursor. */
  cursor: { x: number; y: number };
  alternateScreen: boolean;
  /** The window title the program set, or "". */
  title: string;
  contentHash: string;
  /** ISO time the visible text last changed; null while nothing was ever drawn. */
  lastContentChange: string | null;
  /** Output bytes a flood went past without the screen model parsing them. */
  skippedBytes: number;
}
export interface LogsResult {
  /** Raw output; empty when the screen was asked for. */
  data: Uint8Array;
  /** Byte offset of data[0] in the agent's whole output. */
  offset: number;
  endOffset: number;
  exited: boolean;
  exitCode?: number;
  screen?: ScreenView;
}
export interface AttachResult {
  agentId: string;
  /** Where the replay starts (may be later than fromOffset when the ring no longer holds it). */
  offset: number;
  endOffset: number;
  cols: number;
  rows: number;
  exited: boolean;
  exitCode?: number;
}
export interface DiffFile {
  path: string;
  insertions: number;
  deletions: number;
  binary?: boolean;
}
export interface WorktreeDiff {
  worktreeId: string;
  name: string;
  branch: string;
  baseBranch: string;
  mergeBase: string;
  files: DiffFile[];
  insertions: number;
  deletions: number;
  /** Unified diff text; omitted in stat mode. */
  patch?: string;
  /** Why this worktree could not be diffed (its directory or branch is gone); the others still are. */
  error?: string;
}
export interface DiffResult {
  worktrees: WorktreeDiff[];
}
export interface MergeResult {
  worktreeId: string;
  status: WorktreeEntry["status"];
  strategy: "merge" | "squash" | "ff-only";
  baseBranch: string;
  commit?: string;
  /** The branch had no commit its base lacks: nothing was merged and the worktree stays as it was. */
  nothingToMerge?: boolean;
}
export interface CleanResult {
  cleaned: {
    worktreeId: string;
    killedAgents: string[];
    removedPath: boolean;
    deletedBranch: boolean;
    notes: string[];
    /** What `force` threw away. */
    discarded?: WorkAtRiskView;
  }[];
  /** Worktrees `all` left in place because removing them would lose work. */
  kept: ({ worktreeId: string; name: string; reason: string } & WorkAtRiskView)[];
}
export interface WorkAtRiskView {
  uncommittedFiles: string[];
  unmergedCommits: number;
}
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
export interface TrustResult {
  /** Every command-bearing item of the project's `.pu/`, with whether it was trusted before this request. */
  items: { key: string; file: string; runs: string; trusted: boolean }[];
  /** How many items this request trusted (0 with `showOnly`). */
  recorded: number;
}
export interface GateResult {
  passed: boolean;
  runs: Omit<GateRun, "agentId" | "seqIndex">[];
}

export interface ResultMap {
  hello: HelloAck;
  health: HealthResult;
  shutdown: { stopping: true };
  init: { created: boolean; projectRoot: string; manifestPath: string };
  spawn: SpawnResult;
  status: StatusReport;
  kill: KillResult;
  suspend: SuspendResult;
  resume: { agent: AgentEntry };
  logs: LogsResult;
  attach: AttachResult;
  input: { bytes: number };
  resize: { cols: number; rows: number };
  rename: { target: string; name: string };
  diff: DiffResult;
  merge: MergeResult;
  clean: CleanResult;
  subscribe_status: StatusReport;
  definition_list: { definitions: DefinitionSummary[] };
  definition_get: DefinitionGetResult;
  definition_save: { path: string; scope: "local" | "global"; warnings: string[] };
  definition_delete: { path: string };
  run_swarm: RunSwarmResult;
  assign_trigger: { agentId: string; triggerName: string; triggerTotal: number; triggerState: TriggerState };
  trigger_log: { runs: GateRun[] };
  schedule_enable: { name: string; enabled: boolean; nextRun: string | null };
  gate: GateResult;
  trust: TrustResult;
}
export type ResultOf<T extends RequestType> = ResultMap[T];

// ---- frames from the daemon ----

export interface OkFrame<T extends RequestType = RequestType> {
  type: "ok";
  id: number | string;
  result: ResultOf<T>;
}
export interface HelloAckFrame extends HelloAck {
  type: "helloAck";
  id: number | string;
}
export interface ErrorFrame {
  type: "error";
  id: number | string | null;
  code: ErrorCode;
  message: string;
  /** Structured facts behind the error (a merge conflict's `conflicts`: the files). */
  details?: Record<string, unknown>;
}
/** Stream events carry the id of the request (attach / subscribe_status) that opened the stream. */
export interface OutputEvent {
  type: "output";
  id: number | string;
  agentId: string;
  data: Uint8Array;
  offset: number;
}
export interface ExitEvent {
  type: "exit";
  id: number | string;
  agentId: string;
  exitCode: number;
}
/** Something the viewer should know, e.g. it fell behind and output was skipped. */
export interface NoticeEvent {
  type: "notice";
  id: number | string;
  agentId?: string;
  code: "SKIPPED" | "DETACHED" | "SHUTDOWN";
  message: string;
  skippedBytes?: number;
}
export interface StatusEvent {
  type: "status_event";
  id: number | string;
  projectRoot: string;
  report: StatusReport;
  /** Agents whose effective status changed since the last event (empty for manifest-only changes). */
  changed: { agentId: string; from: AgentStatus | null; to: AgentStatus }[];
}
export type EventFrame = OutputEvent | ExitEvent | NoticeEvent | StatusEvent;
export type DaemonFrame = OkFrame | HelloAckFrame | ErrorFrame | EventFrame;

export type { Manifest };
