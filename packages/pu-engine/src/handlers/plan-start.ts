import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type PlanStartContext = Pick<EngineServices, "plans" | "state">;

export async function handlePlanStart(services: PlanStartContext, req: RequestOf<"plan_start">): Promise<ResultOf<"plan_start">> {
  const root = await services.state.project(req.projectRoot);
  return services.plans.start(root, {
    goal: req.goal,
    ...(req.maxWorkers !== undefined ? { maxWorkers: req.maxWorkers } : {}),
    ...(req.maxIterations !== undefined ? { maxIterations: req.maxIterations } : {}),
    ...(req.skipVerify !== undefined ? { skipVerify: req.skipVerify } : {}),
    ...(req.planOnly !== undefined ? { planOnly: req.planOnly } : {}),
    ...(req.auto !== undefined ? { auto: req.auto } : {}),
    ...(req.maxCost !== undefined ? { maxCost: req.maxCost } : {}),
    ...(req.maxTokens !== undefined ? { maxTokens: req.maxTokens } : {}),
    ...(req.on !== undefined ? { on: req.on } : {}),
  });
}
