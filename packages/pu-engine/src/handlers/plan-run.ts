import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export type PlanRunContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanRun(services: PlanRunContext, req: RequestOf<"plan_run">): Promise<ResultOf<"plan_run">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.run(root, validatePlanSessionId(req.sessionId));
}
