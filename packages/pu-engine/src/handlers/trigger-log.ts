import { findAgent } from "@pu/core/manifest";
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { readGateRuns } from "../gates/gates.js";
import type { EngineState } from "../state.js";

/** Every recorded gate run of an agent (the file keeps the last 200), oldest first. */
export async function handleTriggerLog(state: EngineState, req: RequestOf<"trigger_log">): Promise<ResultOf<"trigger_log">> {
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  if (!findAgent(m, req.agentId)) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.agentId} in ${root}`);
  return { runs: await readGateRuns(root, req.agentId) };
}
