import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type AssignTriggerContext = Pick<EngineServices, "state" | "automation">;

/** Binds a trigger to an existing agent (replacing any binding), starting at its first action. */
export async function handleAssignTrigger(ctx: AssignTriggerContext, req: RequestOf<"assign_trigger">): Promise<ResultOf<"assign_trigger">> {
  return ctx.automation.assignTrigger(await ctx.state.project(req.projectRoot), req.agentId, req.trigger, req.vars);
}
