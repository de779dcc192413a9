import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { EngineServices } from "../services.js";

export type ResizeContext = Pick<EngineServices, "agents" | "remote">;

/** Records the asking connection's window size; the reply is the size the PTY now has. */
export async function handleResize(ctx: ResizeContext, req: RequestOf<"resize">, conn: ConnectionContext): Promise<ResultOf<"resize">> {
  const placed = await ctx.remote.route(req.agentId, "agent");
  if (placed) return ctx.remote.resize(placed, req, conn);
  return ctx.remote.here(req.agentId, () => ctx.agents.resize(req.agentId, conn.connectionId, req.cols, req.rows));
}
