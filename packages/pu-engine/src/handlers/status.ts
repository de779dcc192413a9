import type { RequestOf, StatusReport } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type StatusContext = Pick<EngineServices, "state" | "statusWatch">;

export async function handleStatus(ctx: StatusContext, req: RequestOf<"status">): Promise<StatusReport> {
  return ctx.statusWatch.report(await ctx.state.project(req.projectRoot), req.agentId);
}
