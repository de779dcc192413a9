import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export type PlanMergeContext = Pick<EngineServices, "state" | "plans">;

export async function handlePlanMerge(services: PlanMergeContext, req: RequestOf<"plan_merge">): Promise<ResultOf<"plan_merge">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.merge(root, validatePlanSessionId(req.sessionId), {
    strategy: req.strategy,
    ...(req.message !== undefined ? { message: req.message } : {}),
    ...(req.into !== undefined ? { into: req.into } : {}),
  });
}
