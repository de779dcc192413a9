import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import { mergePlan } from "../orchestration/plans/plan-merge.js";
import type { EngineServices } from "../services.js";

export async function handlePlanMerge(services: EngineServices, req: RequestOf<"plan_merge">): Promise<ResultOf<"plan_merge">> {
  const root = await services.state.project(req.projectRoot);
  return mergePlan(services.state, root, validatePlanSessionId(req.sessionId), {
    strategy: req.strategy,
    ...(req.message !== undefined ? { message: req.message } : {}),
    ...(req.into !== undefined ? { into: req.into } : {}),
  });
}
