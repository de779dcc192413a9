import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import { requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";

/** Records the asking connection's window size; the reply is the size the PTY now has. */
export async function handleResize(state: EngineState, req: RequestOf<"resize">, ctx: ConnectionContext): Promise<ResultOf<"resize">> {
  const { session } = await requireSession(state, req.agentId);
  session.setViewerSize(ctx.connectionId, req.cols, req.rows);
  return { cols: session.cols, rows: session.rows };
}
