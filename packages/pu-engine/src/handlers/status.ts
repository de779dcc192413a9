import type { RequestOf, StatusReport } from "@pu/ipc/protocol";
import { PuError } from "@pu/core/errors";
import { narrowToAgent } from "@pu/ipc/status-report";
import type { EngineServices } from "../services.js";

export type StatusContext = Pick<EngineServices, "state" | "statusWatch" | "remote">;

export async function handleStatus(ctx: StatusContext, req: RequestOf<"status">): Promise<StatusReport> {
  const root = await ctx.state.project(req.projectRoot);
  if (ctx.remote.projectsOf(root).length === 0) return ctx.statusWatch.report(root, req.agentId);
  const report = await ctx.remote.withRemote(await ctx.statusWatch.report(root));
  if (req.agentId === undefined) return report;
  const one = narrowToAgent(report, req.agentId);
  if (!one) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.agentId} in ${root}`);
  return one;
}
