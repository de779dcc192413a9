import type { LogsResult, RequestOf } from "@pu/ipc/protocol";
import { requireSession } from "../agents/registry.js";
import type { EngineState } from "../state.js";

/** The output the daemon still holds for an agent (raw bytes, as the PTY wrote them). */
export async function handleLogs(state: EngineState, req: RequestOf<"logs">): Promise<LogsResult> {
  const { session } = await requireSession(state, req.agentId);
  const slice = req.tail === undefined ? session.ring.read() : session.ring.tail(req.tail);
  const result: LogsResult = {
    data: slice.data,
    offset: slice.offset,
    endOffset: session.ring.endOffset,
    exited: session.exitCode !== null,
  };
  if (session.exitCode !== null) result.exitCode = session.exitCode;
  return result;
}
