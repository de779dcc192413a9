import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export async function handlePlanStatus(services: EngineServices, req: RequestOf<"plan_status">): Promise<ResultOf<"plan_status">> {
  const root = await services.state.project(req.projectRoot);
  const sessionId = validatePlanSessionId(req.sessionId);
  const [summary, design] = await Promise.all([services.plans.summary(root, sessionId), services.plans.design(root, sessionId)]);
  return { ...summary, design, usage: await services.usage.ownerFigures(root, { kind: "plan", id: sessionId }) };
}
