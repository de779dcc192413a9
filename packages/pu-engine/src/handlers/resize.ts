import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { EngineServices } from "../services.js";

export type ResizeContext = Pick<EngineServices, "agents" | "remote">;

/** Records the asking connection's window size; the reply is the size the PTY now has. */
export async function handleResize(ctx: ResizeContext, req: RequestOf<"resize">, conn: ConnectionContext): Promise<ResultOf<"resize">> {
  const placed = ctx.remote.placedAgent(req.agentId);
  if (placed) return ctx.remote.resize(placed, req, conn);
  return ctx.agents.resize(req.agentId, conn.connectionId, req.cols, req.rows);
}
