import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type PlanListContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanList(services: PlanListContext, req: RequestOf<"plan_list">): Promise<ResultOf<"plan_list">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.list(root);
}
