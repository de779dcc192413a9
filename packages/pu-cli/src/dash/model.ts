// What the dashboard shows, as plain data and pure functions (tested without a terminal):
// the rows of the agent list from the live status reports, and who just started waiting.
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { escapeControlCharacters } from "@pu/core/names";
import { withHostState } from "@pu/core/status-label";
import { formatCost } from "@pu/core/usage";
import { formatDuration } from "../format.js";

export interface DashRow {
  projectRoot: string;
  agentId: string;
  /** `(root)` or the worktree's name. */
  place: string;
  worktreeId?: string;
  name: string;
  agentType: string;
  model?: string;
  status: string;
  waitingReason?: string;
  /** The queue, a group or a plan stopped it after its work (`broken (done)`, not a failure). */
  finishedBy?: string;
  idle: string;
  live: boolean;
  contentHash?: string;
  lastScreenLine?: string;
  /** The host it runs on (absent: this machine), and whether that host answers now. */
  host?: string;
  hostState?: "connected" | "unreachable";
  /** What it cost so far: `$0.42`, `?` for a model without a price, `-` when its CLI left no record. */
  cost: string;
  /** pu stopped its turn at its budget. */
  overBudget: boolean;
}

function row(projectRoot: string, place: string, agent: AgentView, worktreeId?: string): DashRow {
  const r: DashRow = {
    projectRoot,
    agentId: agent.id,
    place,
    name: agent.name,
    agentType: agent.agentType,
    status: agent.suspended ? "benched" : agent.status,
    idle: agent.idleSeconds === null ? "-" : formatDuration(agent.idleSeconds),
    live: agent.live,
    cost: agent.usage ? formatCost(agent.usage.costUsd) : "-",
    overBudget: agent.budget?.exceededAt !== undefined && agent.status !== "broken",
  };
  if (worktreeId) r.worktreeId = worktreeId;
  if (typeof agent.model === "string" && agent.model) r.model = agent.model;
  if (agent.waitingReason) r.waitingReason = agent.waitingReason;
  if (agent.status === "broken" && typeof agent.finishedBy === "string") r.finishedBy = agent.finishedBy;
  if (agent.contentHash) r.contentHash = agent.contentHash;
  if (agent.lastScreenLine) r.lastScreenLine = agent.lastScreenLine;
  if (agent.host) {
    r.host = agent.host;
    r.place = `${place}@${agent.host}`;
  }
  if (agent.hostState) r.hostState = agent.hostState;
  return r;
}

/** Projects in the order given; per project its root agents, then each worktree's (not merged or cleaned), oldest first. */
export function dashRows(reports: readonly StatusReport[], filter = ""): DashRow[] {
  const rows: DashRow[] = [];
  const byStart = (a: AgentView, b: AgentView) => a.startedAt.localeCompare(b.startedAt);
  for (const report of reports) {
    for (const agent of Object.values(report.agents).sort(byStart)) rows.push(row(report.projectRoot, "(root)", agent));
    // Every worktree with agents that still has a checkout (a failed merge leaves it as it was).
    const worktrees = Object.values(report.worktrees)
      .filter((w) => w.status !== "cleaned" && w.status !== "merged")
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    for (const wt of worktrees) for (const agent of Object.values(wt.agents).sort(byStart)) rows.push(row(report.projectRoot, wt.name, agent, wt.id));
  }
  const needle = filter.toLowerCase();
  return needle ? rows.filter((r) => [r.agentId, r.name, r.place, r.agentType, r.status].some((v) => v.toLowerCase().includes(needle))) : rows;
}

/**
 * What pu could not read for these reports (a corrupt hosts.json, an unreadable state file, a
 * host that does not answer), one `problem: …` line each as `pu status` says them, control
 * characters shown as \xNN; a line that two projects' reports share (hosts.json is one for all) once.
 */
export function dashProblems(reports: readonly StatusReport[]): string[] {
  const lines = new Set<string>();
  for (const report of reports) for (const problem of report.problems ?? []) lines.add(`problem: ${escapeControlCharacters(problem)}`);
  return [...lines];
}

/**
 * At most `room` lines for the problems: when there are more, the last line counts the rest and
 * says where they are in full, so the agent list keeps its room.
 */
export function problemLines(problems: readonly string[], room: number): string[] {
  if (problems.length <= room) return [...problems];
  const shown = Math.max(0, room - 1);
  const rest = problems.length - shown;
  return [...problems.slice(0, shown), `${rest} ${shown > 0 ? "more " : ""}problem${rest === 1 ? "" : "s"}: \`pu status\` lists them`];
}

/** Agents that are waiting now and were not in the previous reports (they need the person). */
export function newlyWaiting(before: readonly DashRow[], now: readonly DashRow[]): DashRow[] {
  const was = new Map(before.map((r) => [r.agentId, r.status]));
  return now.filter((r) => r.live && r.status === "waiting" && was.has(r.agentId) && was.get(r.agentId) !== "waiting");
}

/**
 * The status cell: `waiting (done)` for a finished turn, `waiting (permission)` for a dialog,
 * `broken (done)` for an agent pu stopped after its work; `(host unreachable)` after an agent
 * whose host does not answer (shown as last seen).
 */
export function statusLabel(r: DashRow): string {
  return withHostState(localLabel(r), r.hostState);
}

function localLabel(r: DashRow): string {
  if (r.finishedBy !== undefined) return "broken (done)";
  if (r.overBudget) return "budget";
  if (r.status !== "waiting" || !r.waitingReason) return r.status;
  if (r.waitingReason === "turn_end") return "waiting (done)";
  if (r.waitingReason === "permission") return "waiting (permission)";
  return "waiting";
}
