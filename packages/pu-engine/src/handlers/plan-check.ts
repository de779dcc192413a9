import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type PlanCheckContext = Pick<EngineServices, "plans">;

/** A plan worker's check: run in its worktree by the daemon, recorded as evidence whatever it returns. */
export function handlePlanCheck(services: PlanCheckContext, req: RequestOf<"plan_check">): Promise<ResultOf<"plan_check">> {
  return services.plans.check(req.agentId, req.command);
}
