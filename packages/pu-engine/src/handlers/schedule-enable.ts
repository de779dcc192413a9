import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type ScheduleEnableContext = Pick<EngineServices, "state" | "automation">;

export async function handleScheduleEnable(ctx: ScheduleEnableContext, req: RequestOf<"schedule_enable">): Promise<ResultOf<"schedule_enable">> {
  return ctx.automation.setScheduleEnabled(await ctx.state.project(req.projectRoot), req.name, req.enabled);
}
