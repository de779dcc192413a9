import type { AttachResult, RequestOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { EngineServices } from "../services.js";
import type { ViewerSink } from "../session/ring-viewer.js";

export type AttachContext = Pick<EngineServices, "state" | "agents" | "remote">;

/**
 * Replies with where the replay starts, then streams output/notice/exit events for this
 * viewer at the connection's own pace. Input and resize arrive as separate requests.
 */
export async function handleAttach(ctx: AttachContext, req: RequestOf<"attach">, conn: ConnectionContext): Promise<AttachResult> {
  const { id, agentId } = req;
  const placed = await ctx.remote.route(agentId, "agent");
  if (placed) return ctx.remote.attach(placed, req, conn);
  // The connection calls its drain listeners on every drain; the viewer wants one call per pause.
  let drainWaiter: (() => void) | undefined;
  conn.onDrain(() => {
    const waiter = drainWaiter;
    drainWaiter = undefined;
    waiter?.();
  });
  const sink: ViewerSink = {
    sendOutput: (data, offset) => conn.send({ type: "output", id, agentId, data, offset }),
    sendNotice: (message, skippedBytes) => {
      conn.send({ type: "notice", id, agentId, code: "SKIPPED", message, skippedBytes });
    },
    sendExit: (exitCode) => {
      conn.send({ type: "exit", id, agentId, exitCode });
    },
    bufferedBytes: () => conn.bufferedBytes(),
    onDrain: (cb) => {
      drainWaiter = cb;
    },
  };
  const attached = await ctx.remote.here(agentId, () => ctx.agents.attach(agentId, req.fromOffset, conn.connectionId, sink));
  conn.onClose(attached.detach);
  ctx.state.noticeOnShutdown(conn, () => ({
    type: "notice",
    id,
    agentId,
    code: "SHUTDOWN",
    message: attached.running() ? `the pu daemon is stopping; ${agentId} is suspended (\`pu play ${agentId}\` resumes it)` : "the pu daemon is stopping",
  }));
  return { agentId, ...attached.result };
}
