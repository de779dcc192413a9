import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { validatePlanSessionId } from "@pu/core/plan-layout";
import type { EngineServices } from "../services.js";

export type PlanEvidenceContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanEvidence(services: PlanEvidenceContext, req: RequestOf<"plan_evidence">): Promise<ResultOf<"plan_evidence">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.evidence(root, validatePlanSessionId(req.sessionId));
}
