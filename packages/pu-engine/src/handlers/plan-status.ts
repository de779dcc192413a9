import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export async function handlePlanStatus(services: EngineServices, req: RequestOf<"plan_status">): Promise<ResultOf<"plan_status">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.summary(root, validatePlanSessionId(req.sessionId));
}
