import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export async function handlePlanList(services: EngineServices, req: RequestOf<"plan_list">): Promise<ResultOf<"plan_list">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.list(root);
}
