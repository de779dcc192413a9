import type { RequestOf, StatusReport } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type StatusContext = Pick<EngineServices, "state" | "statusWatch" | "remote">;

export async function handleStatus(ctx: StatusContext, req: RequestOf<"status">): Promise<StatusReport> {
  const root = await ctx.state.project(req.projectRoot);
  // The hosts' agents of this project, asked now (bounded): the report's overlay carries them.
  await ctx.remote.reports(root);
  return ctx.statusWatch.report(root, req.agentId);
}
