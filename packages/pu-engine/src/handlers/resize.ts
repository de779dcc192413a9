import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { requireSession, type EngineState } from "../state.js";

export async function handleResize(state: EngineState, req: RequestOf<"resize">): Promise<ResultOf<"resize">> {
  const { session } = await requireSession(state, req.agentId);
  session.resize(req.cols, req.rows);
  return { cols: session.cols, rows: session.rows };
}
