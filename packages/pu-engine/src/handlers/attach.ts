import type { AttachResult, RequestOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { ViewerSink } from "../session/ring-viewer.js";
import { requireSession } from "../agents/registry.js";
import { noticeOnShutdown, type EngineState } from "../state.js";

/**
 * Replies with where the replay starts, then streams output/notice/exit events for this
 * viewer at the connection's own pace. Input and resize arrive as separate requests.
 */
export async function handleAttach(state: EngineState, req: RequestOf<"attach">, ctx: ConnectionContext): Promise<AttachResult> {
  const live = await requireSession(state, req.agentId);
  const { session } = live;
  const { id, agentId } = req;
  // The connection calls its drain listeners on every drain; the viewer wants one call per pause.
  let drainWaiter: (() => void) | undefined;
  ctx.onDrain(() => {
    const waiter = drainWaiter;
    drainWaiter = undefined;
    waiter?.();
  });
  const sink: ViewerSink = {
    sendOutput: (data, offset) => ctx.send({ type: "output", id, agentId, data, offset }),
    sendNotice: (message, skippedBytes) => {
      ctx.send({ type: "notice", id, agentId, code: "SKIPPED", message, skippedBytes });
    },
    sendExit: (exitCode) => {
      ctx.send({ type: "exit", id, agentId, exitCode });
    },
    bufferedBytes: () => ctx.bufferedBytes(),
    onDrain: (cb) => {
      drainWaiter = cb;
    },
  };
  // The viewer starts sending on the next turn, after this reply has been queued.
  const viewer = session.addViewer(req.fromOffset, sink);
  ctx.onClose(() => {
    viewer.close();
    session.dropViewerSize(ctx.connectionId);
  });
  noticeOnShutdown(state, ctx, () => ({
    type: "notice",
    id,
    agentId,
    code: "SHUTDOWN",
    message: session.exitCode === null
      ? `the pu daemon is stopping; ${agentId} is suspended (\`pu play ${agentId}\` resumes it)`
      : "the pu daemon is stopping",
  }));
  const result: AttachResult = {
    agentId,
    offset: viewer.startOffset,
    endOffset: session.ring.endOffset,
    cols: session.cols,
    rows: session.rows,
    exited: session.exitCode !== null,
  };
  if (session.exitCode !== null) result.exitCode = session.exitCode;
  return result;
}
