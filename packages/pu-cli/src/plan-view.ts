// How a plan session reads in text: its phase line and the task graph, one task per line.
import { budgetTokens, formatCost, formatTokens } from "@pu/core/usage";
import type { PlanView } from "@pu/ipc/protocol";
import type { HumanOutput } from "./report.js";

export function writePlanSummary(out: HumanOutput, plan: PlanView): void {
  const approval = plan.approvedAt ? `approved ${plan.approvedAt}` : plan.tasks.length > 0 ? "waiting for `pu plan approve`" : "not planned yet";
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
