// How a plan session reads in text: its phase line and the task graph, one task per line.
import { budgetTokens, formatCost, formatTokens } from "@pu/core/usage";
import type { PlanView } from "@pu/ipc/protocol";
import type { HumanOutput } from "./report.js";

/**
 * Where the session stands on approval, and the command that moves it on. A --plan-only session
 * held after its plan goes on only with `pu plan run` (approve just records the approval), so
 * that is the command named there, approved or not.
 */
function approvalLine(plan: PlanView): string {
  const heldByPlanOnly = plan.options.plan_only && plan.phase === "PLANNING" && plan.tasks.length > 0;
  const run = `\`pu plan run ${plan.sessionId}\``;
  if (plan.approvedAt) return heldByPlanOnly ? `approved ${plan.approvedAt}; --plan-only: ${run} starts the workers` : `approved ${plan.approvedAt}`;
  if (heldByPlanOnly) return `waiting for ${run} (--plan-only; it approves the plan too)`;
  return plan.tasks.length > 0 ? "waiting for `pu plan approve`" : "not planned yet";
}

export function writePlanSummary(out: HumanOutput, plan: PlanView): void {
  const approval = approvalLine(plan);
  out.line(`${plan.sessionId}  ${plan.phase}${plan.phase === "EXPLORATION" ? ` (${plan.explorationStage})` : ""}  iteration ${plan.iteration}/${plan.options.max_iterations}  ${approval}`);
  out.line(`  goal: ${plan.goal.split("\n")[0]}`);
  out.line(`  branch ${plan.branch}; files ${plan.dir}`);
  if (plan.options.on) out.line(`  workers on ${plan.options.on.join(", ")}`);
  const budget = describePlanBudget(plan.options);
  if (plan.usage) out.line(`  cost ${formatCost(plan.usage.costUsd)} (${formatTokens(budgetTokens(plan.usage))} tokens in ${plan.usage.calls} calls)${budget ? `; budget ${budget}` : ""}`);
  else if (budget) out.line(`  budget ${budget}; nothing spent yet`);
  if (plan.failure) out.line(`  failed: ${plan.failure}`);
  for (const problem of plan.problems) out.line(`  problem: ${problem}`);
  for (const task of plan.tasks) {
    const blocked = task.blockedBy.length > 0 ? ` ← ${task.blockedBy.join(", ")}` : "";
    const where = task.host ? ` on ${task.host}` : "";
    const worker = task.worker || task.host ? ` [${[task.worker, where.trim()].filter(Boolean).join(" ")}]` : "";
    const cost = task.usage ? `  ${formatCost(task.usage.costUsd)}` : "";
    out.line(`  ${task.status.padEnd(11)} ${task.id}: ${task.subject}${blocked}${worker}${cost}`);
  }
}

/** `max $5 / 2M tokens`, or undefined for a plan without a budget. */
function describePlanBudget(options: PlanView["options"]): string | undefined {
  const parts = [options.max_cost != null ? formatCost(options.max_cost) : "", options.max_tokens != null ? `${formatTokens(options.max_tokens)} tokens` : ""].filter(Boolean);
  return parts.length > 0 ? `max ${parts.join(" / ")}` : undefined;
}
