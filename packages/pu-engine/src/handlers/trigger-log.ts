import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TriggerLogContext = Pick<EngineServices, "state" | "automation">;

export async function handleTriggerLog(ctx: TriggerLogContext, req: RequestOf<"trigger_log">): Promise<ResultOf<"trigger_log">> {
  return ctx.automation.triggerLog(await ctx.state.project(req.projectRoot), req.agentId);
}
