import { PuError } from "@pu/core/errors";
import type { RequestOf, StatusReport } from "@pu/ipc/protocol";
import { narrowToAgent } from "@pu/ipc/status-report";
import type { EngineState } from "../state.js";
import { buildStatusReport } from "../status-watch.js";

export async function handleStatus(state: EngineState, req: RequestOf<"status">): Promise<StatusReport> {
  const root = await state.project(req.projectRoot);
  const report = buildStatusReport(state, await state.store.read(root));
  if (req.agentId === undefined) return report;
  const narrowed = narrowToAgent(report, req.agentId);
  if (!narrowed) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.agentId} in ${report.projectRoot}`);
  return narrowed;
}
