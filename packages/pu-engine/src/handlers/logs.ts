import type { LogsResult, RequestOf, ScreenView } from "@pu/ipc/protocol";
import { requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";
import type { ScreenModel } from "../session/screen-model.js";

/** The output the daemon still holds for an agent: raw bytes as the PTY wrote them, or the rendered screen. */
export async function handleLogs(state: EngineState, req: RequestOf<"logs">): Promise<LogsResult> {
  const { session } = await requireSession(state, req.agentId);
  let result: LogsResult;
  if (req.screen) {
    // Output still queued for the screen model is parsed first: the reply shows everything received.
    await session.screen.settle();
    result = { data: new Uint8Array(0), offset: session.ring.endOffset, endOffset: session.ring.endOffset, exited: session.exitCode !== null, screen: screenView(session.screen) };
  } else {
    const slice = req.tail === undefined ? session.ring.read() : session.ring.tail(req.tail);
    result = { data: slice.data, offset: slice.offset, endOffset: session.ring.endOffset, exited: session.exitCode !== null };
  }
  if (session.exitCode !== null) result.exitCode = session.exitCode;
  return result;
}

function screenView(screen: ScreenModel): ScreenView {
  const snap = screen.snapshot();
  return {
    cols: snap.cols,
    rows: snap.rows,
    lines: snap.lines,
    cursor: snap.cursor,
    alternateScreen: snap.alternateScreen,
    title: snap.title,
    contentHash: snap.contentHash,
    lastContentChange: snap.lastContentChange === null ? null : new Date(snap.lastContentChange).toISOString(),
    skippedBytes: snap.skippedBytes,
  };
}
