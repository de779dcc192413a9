import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import { roleAgentName } from "../orchestration/plans/role-agent.js";
import type { EngineServices } from "../services.js";

export type PlanStatusContext = Pick<EngineServices, "plans" | "state" | "usage">;

export async function handlePlanStatus(services: PlanStatusContext, req: RequestOf<"plan_status">): Promise<ResultOf<"plan_status">> {
  const root = await services.state.project(req.projectRoot);
  const sessionId = validatePlanSessionId(req.sessionId);
  const [summary, design] = await Promise.all([services.plans.summary(root, sessionId), services.plans.design(root, sessionId)]);
  const owner = { kind: "plan" as const, id: sessionId };
  const [usage, byName] = await Promise.all([services.usage.ownerFigures(root, owner), services.usage.ownerFiguresByName(root, owner)]);
  // A task's workers carry its name (plan-<session>-<task>), restarts included.
  const tasks = summary.tasks.map((task) => ({ ...task, usage: byName.get(roleAgentName(sessionId, { role: "worker", taskId: task.id })) ?? null }));
  return { ...summary, tasks, design, usage };
}
