import { PuError } from "@pu/core/errors";
import type { RequestOf, StatusReport, WorktreeView } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";
import { buildStatusReport } from "../status-watch.js";

export async function handleStatus(state: EngineState, req: RequestOf<"status">): Promise<StatusReport> {
  const root = await state.project(req.projectRoot);
  const report = buildStatusReport(state, await state.store.read(root));
  return req.agentId === undefined ? report : onlyAgent(report, req.agentId);
}

/** The same report shape, cut down to one agent (and its worktree, if any). */
function onlyAgent(report: StatusReport, agentId: string): StatusReport {
  const rootAgent = report.agents[agentId];
  if (rootAgent) return { ...report, worktrees: {}, agents: { [agentId]: rootAgent } };
  for (const [id, wt] of Object.entries(report.worktrees)) {
    const agent = wt.agents[agentId];
    if (agent) {
      const view: WorktreeView = { ...wt, agents: { [agentId]: agent } };
      return { ...report, worktrees: { [id]: view }, agents: {} };
    }
  }
  throw new PuError("AGENT_NOT_FOUND", `no agent ${agentId} in ${report.projectRoot}`);
}
