import type { LogsResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type LogsContext = Pick<EngineServices, "agents">;

/** The output the daemon still holds for an agent: raw bytes as the PTY wrote them, or the rendered screen. */
export async function handleLogs(ctx: LogsContext, req: RequestOf<"logs">): Promise<LogsResult> {
  return ctx.agents.output(req.agentId, req);
}
