import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { runHookGates } from "../automation/hook-gates.js";
import type { EngineState } from "../state.js";

/** `pu gate pre-commit|pre-push` from a git hook: every matching trigger's gates, run in `cwd`. */
export async function handleGate(state: EngineState, req: RequestOf<"gate">): Promise<ResultOf<"gate">> {
  const root = await state.project(req.projectRoot);
  return runHookGates(state, root, req.event, req.cwd);
}
