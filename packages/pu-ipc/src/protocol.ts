// The wire protocol: every request the daemon answers, built from the domain files in
// requests/ (each holds its requests' schemas and results), and the
// frames the daemon sends.
import { z } from "zod";
import type { ErrorCode } from "@pu/core/errors";
import type { AgentStatus, Manifest } from "@pu/core/manifest";
import * as agents from "./requests/agents.js";
import * as daemon from "./requests/daemon.js";
import * as definitions from "./requests/definitions.js";
import * as groups from "./requests/groups.js";
import * as hosts from "./requests/hosts.js";
import * as plans from "./requests/plans.js";
import * as queue from "./requests/queue.js";
import * as usage from "./requests/usage.js";
import * as worktrees from "./requests/worktrees.js";

export { DefinitionKindSchema } from "./fields.js";
export type { DefinitionKind } from "./fields.js";
export type * from "./requests/agents.js";
export type * from "./requests/daemon.js";
export type * from "./requests/definitions.js";
export type * from "./requests/groups.js";
export type * from "./requests/hosts.js";
export type * from "./requests/plans.js";
export type * from "./requests/queue.js";
export type * from "./requests/usage.js";
export type * from "./requests/worktrees.js";
export { USAGE_GROUPINGS } from "./requests/usage.js";

// Bumped on any incompatible change to a request, reply or event shape.
export const PROTOCOL_VERSION = 1;
export const DAEMON_VERSION = "0.1.0";

export const RequestSchemas = {
  hello: daemon.HelloRequest,
  health: daemon.HealthRequest,
  shutdown: daemon.ShutdownRequest,
  init: daemon.InitRequest,
  trust: daemon.TrustRequest,
  spawn: agents.SpawnRequest,
  status: agents.StatusRequest,
  subscribe_status: agents.SubscribeStatusRequest,
  kill: agents.KillRequest,
  suspend: agents.SuspendRequest,
  resume: agents.ResumeRequest,
  logs: agents.LogsRequest,
  attach: agents.AttachRequest,
  input: agents.InputRequest,
  type_text: agents.TypeTextRequest,
  agent_signal: agents.AgentSignalRequest,
  resize: agents.ResizeRequest,
  rename: agents.RenameRequest,
  diff: worktrees.DiffRequest,
  merge: worktrees.MergeRequest,
  clean: worktrees.CleanRequest,
  definition_list: definitions.DefinitionListRequest,
  definition_get: definitions.DefinitionGetRequest,
  definition_save: definitions.DefinitionSaveRequest,
  definition_delete: definitions.DefinitionDeleteRequest,
  run_swarm: definitions.RunSwarmRequest,
  assign_trigger: definitions.AssignTriggerRequest,
  trigger_log: definitions.TriggerLogRequest,
  schedule_enable: definitions.ScheduleEnableRequest,
  gate: definitions.GateRequest,
  group_run: groups.GroupRunRequest,
  group_list: groups.GroupListRequest,
  group_status: groups.GroupStatusRequest,
  group_cancel: groups.GroupCancelRequest,
  group_diff: groups.GroupDiffRequest,
  group_pick: groups.GroupPickRequest,
  plan_start: plans.PlanStartRequest,
  plan_list: plans.PlanListRequest,
  plan_status: plans.PlanStatusRequest,
  plan_approve: plans.PlanApproveRequest,
  plan_run: plans.PlanRunRequest,
  plan_cancel: plans.PlanCancelRequest,
  plan_evidence: plans.PlanEvidenceRequest,
  plan_check: plans.PlanCheckRequest,
  plan_merge: plans.PlanMergeRequest,
  ticket_create: queue.TicketCreateRequest,
  ticket_list: queue.TicketListRequest,
  ticket_show: queue.TicketShowRequest,
  ticket_cancel: queue.TicketCancelRequest,
  queue_status: queue.QueueStatusRequest,
  queue_pause: queue.QueuePauseRequest,
  queue_resume: queue.QueueResumeRequest,
  queue_collection: queue.QueueCollectionRequest,
  review_list: queue.ReviewListRequest,
  review_approve: queue.ReviewApproveRequest,
  review_reject: queue.ReviewRejectRequest,
  stats: queue.StatsRequest,
  stats_prefer: queue.StatsPreferRequest,
  host_add: hosts.HostAddRequest,
  host_list: hosts.HostListRequest,
  host_remove: hosts.HostRemoveRequest,
  host_check: hosts.HostCheckRequest,
  host_install: hosts.HostInstallRequest,
  usage: usage.UsageRequest,
  budget: usage.BudgetRequest,
};

type AnyRequestSchema = (typeof RequestSchemas)[keyof typeof RequestSchemas];
export const RequestSchema = z.discriminatedUnion("type", Object.values(RequestSchemas) as [AnyRequestSchema, ...AnyRequestSchema[]]);

export type Request = z.infer<typeof RequestSchema>;
export type RequestType = Request["type"];
export type RequestOf<T extends RequestType> = Extract<Request, { type: T }>;
/** What a caller supplies: the request without `type` and `id`, defaults optional. */
export type RequestFields<T extends RequestType> = Omit<z.input<(typeof RequestSchemas)[T]>, "type" | "id">;


export type ResultMap = daemon.DaemonResults &
  agents.AgentsResults &
  worktrees.WorktreesResults &
  definitions.DefinitionsResults &
  plans.PlansResults &
  groups.GroupsResults &
  hosts.HostsResults &
  usage.UsageResults &
  queue.QueueResults;
export type ResultOf<T extends RequestType> = ResultMap[T];

// ---- frames from the daemon ----

export interface OkFrame<T extends RequestType = RequestType> {
  type: "ok";
  id: number | string;
  result: ResultOf<T>;
}
export interface HelloAckFrame extends daemon.HelloAck {
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
  report: agents.StatusReport;
  /** Agents whose effective status changed since the last event (empty for manifest-only changes). */
  changed: { agentId: string; from: AgentStatus | null; to: AgentStatus }[];
}
export type EventFrame = OutputEvent | ExitEvent | NoticeEvent | StatusEvent;
export type DaemonFrame = OkFrame | HelloAckFrame | ErrorFrame | EventFrame;

export type { Manifest };
