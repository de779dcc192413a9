// Which function answers which request.
import type { HandlerTable } from "@pu/ipc/server";
import { handleAssignTrigger } from "./handlers/assign-trigger.js";
import { handleAgentSignal } from "./handlers/agent-signal.js";
import { handleAttach } from "./handlers/attach.js";
import { handleClean } from "./handlers/clean.js";
import { handleDefinitionDelete } from "./handlers/definition-delete.js";
import { handleDefinitionGet } from "./handlers/definition-get.js";
import { handleDefinitionList } from "./handlers/definition-list.js";
import { handleDefinitionSave } from "./handlers/definition-save.js";
import { handleDiff } from "./handlers/diff.js";
import { handleGate } from "./handlers/gate.js";
import { handleHealth } from "./handlers/health.js";
import { handleHostAdd, handleHostCheck, handleHostInstall, handleHostList, handleHostRemove } from "./handlers/hosts.js";
import { handleInit } from "./handlers/init.js";
import { handleInput } from "./handlers/input.js";
import { handleKill } from "./handlers/kill.js";
import { handleLogs } from "./handlers/logs.js";
import { handleMerge } from "./handlers/merge.js";
import { handlePlanApprove } from "./handlers/plan-approve.js";
import { handlePlanCancel } from "./handlers/plan-cancel.js";
import { handlePlanCheck } from "./handlers/plan-check.js";
import { handlePlanEvidence } from "./handlers/plan-evidence.js";
import { handlePlanList } from "./handlers/plan-list.js";
import { handlePlanMerge } from "./handlers/plan-merge.js";
import { handlePlanRun } from "./handlers/plan-run.js";
import { handlePlanStart } from "./handlers/plan-start.js";
import { handlePlanStatus } from "./handlers/plan-status.js";
import { handleRename } from "./handlers/rename.js";
import { handleResize } from "./handlers/resize.js";
import { handleResume } from "./handlers/resume.js";
import { handleRunSwarm } from "./handlers/run-swarm.js";
import { handleScheduleEnable } from "./handlers/schedule-enable.js";
import { handleShutdown } from "./handlers/shutdown.js";
import { handleSpawn } from "./handlers/spawn.js";
import { handleStatus } from "./handlers/status.js";
import { handleSubscribeStatus } from "./handlers/subscribe-status.js";
import { handleSuspend } from "./handlers/suspend.js";
import { handleTriggerLog } from "./handlers/trigger-log.js";
import { handleTrust } from "./handlers/trust.js";
import { handleTypeText } from "./handlers/type-text.js";
import { handleQueueCollection, handleQueuePause, handleQueueStatus } from "./handlers/queue.js";
import { handleGroupCancel, handleGroupDiff, handleGroupList, handleGroupPick, handleGroupRun, handleGroupStatus } from "./handlers/groups.js";
import { handleReviewApprove, handleReviewList, handleReviewReject } from "./handlers/reviews.js";
import { handleStats, handleStatsPrefer } from "./handlers/stats.js";
import { handleBudget, handleUsage } from "./handlers/usage.js";
import { handleTicketCancel, handleTicketCreate, handleTicketList, handleTicketShow } from "./handlers/tickets.js";
import type { EngineServices } from "./services.js";
import type { EngineState } from "./state.js";

export function createHandlers(services: EngineServices): HandlerTable {
  const { state } = services;
  return withErrorLog(state, {
    health: (req) => handleHealth(services, req),
    shutdown: (req) => handleShutdown(services, req),
    init: (req) => handleInit(services, req),
    spawn: (req) => handleSpawn(services, req),
    status: (req) => handleStatus(services, req),
    subscribe_status: (req, ctx) => handleSubscribeStatus(services, req, ctx),
    kill: (req) => handleKill(services, req),
    suspend: (req) => handleSuspend(services, req),
    resume: (req) => handleResume(services, req),
    logs: (req) => handleLogs(services, req),
    attach: (req, ctx) => handleAttach(services, req, ctx),
    input: (req) => handleInput(services, req),
    type_text: (req) => handleTypeText(services, req),
    agent_signal: (req) => handleAgentSignal(services, req),
    resize: (req, ctx) => handleResize(services, req, ctx),
    rename: (req) => handleRename(services, req),
    diff: (req) => handleDiff(services, req),
    merge: (req) => handleMerge(services, req),
    clean: (req) => handleClean(services, req),
    definition_list: (req) => handleDefinitionList(services, req),
    definition_get: (req) => handleDefinitionGet(services, req),
    definition_save: (req) => handleDefinitionSave(services, req),
    definition_delete: (req) => handleDefinitionDelete(services, req),
    run_swarm: (req) => handleRunSwarm(services, req),
    assign_trigger: (req) => handleAssignTrigger(services, req),
    trigger_log: (req) => handleTriggerLog(services, req),
    schedule_enable: (req) => handleScheduleEnable(services, req),
    gate: (req) => handleGate(services, req),
    trust: (req) => handleTrust(services, req),
    plan_start: (req) => handlePlanStart(services, req),
    plan_list: (req) => handlePlanList(services, req),
    plan_status: (req) => handlePlanStatus(services, req),
    plan_approve: (req) => handlePlanApprove(services, req),
    plan_run: (req) => handlePlanRun(services, req),
    plan_cancel: (req) => handlePlanCancel(services, req),
    plan_evidence: (req) => handlePlanEvidence(services, req),
    plan_check: (req) => handlePlanCheck(services, req),
    plan_merge: (req) => handlePlanMerge(services, req),
    ticket_create: (req) => handleTicketCreate(services, req),
    ticket_list: (req) => handleTicketList(services, req),
    ticket_show: (req) => handleTicketShow(services, req),
    ticket_cancel: (req) => handleTicketCancel(services, req),
    queue_status: (req) => handleQueueStatus(services, req),
    queue_pause: () => handleQueuePause(services, true),
    queue_resume: () => handleQueuePause(services, false),
    queue_collection: (req) => handleQueueCollection(services, req),
    review_list: (req) => handleReviewList(services, req),
    review_approve: (req) => handleReviewApprove(services, req),
    review_reject: (req) => handleReviewReject(services, req),
    stats: (req) => handleStats(services, req),
    stats_prefer: (req) => handleStatsPrefer(services, req),
    host_add: (req) => handleHostAdd(services, req),
    host_list: () => handleHostList(services),
    host_remove: (req) => handleHostRemove(services, req),
    host_check: (req) => handleHostCheck(services, req),
    host_install: (req) => handleHostInstall(services, req),
    usage: (req) => handleUsage(services, req),
    budget: (req) => handleBudget(services, req),
    group_run: (req) => handleGroupRun(services, req),
    group_list: (req) => handleGroupList(services, req),
    group_status: (req) => handleGroupStatus(services, req),
    group_cancel: (req) => handleGroupCancel(services, req),
    group_diff: (req) => handleGroupDiff(services, req),
    group_pick: (req) => handleGroupPick(services, req),
  });
}

/**
 * Every failed request leaves one line in daemon.log (the server reports only
 * unexpected errors; a user-facing PuError is worth a line too when debugging).
 */
function withErrorLog(state: EngineState, handlers: HandlerTable): HandlerTable {
  const wrapped: Record<string, unknown> = {};
  for (const [type, handler] of Object.entries(handlers) as [string, (req: never, ctx: never) => Promise<unknown>][]) {
    wrapped[type] = async (req: never, ctx: never) => {
      try {
        return await handler(req, ctx);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        state.log.event("request_failed", { type, code: typeof code === "string" ? code : "INTERNAL", message: (err as Error).message });
        throw err;
      }
    };
  }
  return wrapped as HandlerTable;
}
