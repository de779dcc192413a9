import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export type PlanApproveContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanApprove(services: PlanApproveContext, req: RequestOf<"plan_approve">): Promise<ResultOf<"plan_approve">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.approve(root, validatePlanSessionId(req.sessionId));
}
