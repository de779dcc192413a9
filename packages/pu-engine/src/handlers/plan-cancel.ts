import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export type PlanCancelContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanCancel(services: PlanCancelContext, req: RequestOf<"plan_cancel">): Promise<ResultOf<"plan_cancel">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.cancel(root, validatePlanSessionId(req.sessionId));
}
