import type { LogsResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type LogsContext = Pick<EngineServices, "agents" | "remote">;

/** The output the daemon still holds for an agent: raw bytes as the PTY wrote them, or the rendered screen. */
export async function handleLogs(ctx: LogsContext, req: RequestOf<"logs">): Promise<LogsResult> {
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.forwardAgent(placed, "logs", { agentId: req.agentId, ...(req.tail !== undefined ? { tail: req.tail } : {}), ...(req.screen ? { screen: true } : {}) });
  return ctx.remote.here(req.agentId, () => ctx.agents.output(req.agentId, req));
}
