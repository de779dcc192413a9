import type { StatusReport } from "./protocol.js";

/**
 * The report cut down to one agent (and its worktree, if it has one), or undefined when
 * the report does not hold that agent. Type-only imports: cheap on the CLI's start-up path.
 */
export function narrowToAgent(report: StatusReport, agentId: string): StatusReport | undefined {
  const rootAgent = report.agents[agentId];
  if (rootAgent) return { ...report, worktrees: {}, agents: { [agentId]: rootAgent } };
  for (const [id, wt] of Object.entries(report.worktrees)) {
    const agent = wt.agents[agentId];
    if (agent) return { ...report, worktrees: { [id]: { ...wt, agents: { [agentId]: agent } } }, agents: {} };
  }
  return undefined;
}
