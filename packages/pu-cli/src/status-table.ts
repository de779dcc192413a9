import { escapeControlCharacters } from "@pu/core/names";
import type { WorktreeEntry } from "@pu/core/manifest";
import { statusLabel } from "@pu/core/status-label";
import { budgetTokens, formatCost, formatTokens } from "@pu/core/usage";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { formatDuration, paint, truncate, type Style } from "./format.js";

export interface StatusRow {
  worktree: string;
  agent: string;
  name: string;
  type: string;
  status: string;
  idle: string;
  pidExit: string;
  /** What it cost so far (`?` unpriced, `-` no record), and its budget after a slash (a column once any agent has figures). */
  cost: string;
  /** The host it runs on, "-" for this machine (a column only when some agent runs elsewhere). */
  host: string;
  /** The agent's last non-empty screen line, shown under its row (not a column); "" for none. */
  screen: string;
}

/** The table's width when stdout is not a terminal (the screen line is cut to fit it). */
const DEFAULT_TABLE_WIDTH = 80;
const SCREEN_LINE_INDENT = "  └ ";

const COLUMNS: { key: Exclude<keyof StatusRow, "screen">; title: string; max?: number }[] = [
  { key: "worktree", title: "WORKTREE", max: 32 },
  { key: "agent", title: "AGENT" },
  { key: "name", title: "NAME", max: 24 },
  { key: "type", title: "TYPE", max: 12 },
  { key: "host", title: "HOST", max: 20 },
  { key: "status", title: "STATUS" },
  { key: "idle", title: "IDLE" },
  { key: "cost", title: "COST" },
  { key: "pidExit", title: "PID/EXIT" },
];

const STATUS_STYLE: Record<string, Style> = { streaming: "green", waiting: "yellow", broken: "red", budget: "red" };

type WorktreeShown = Pick<WorktreeEntry, "id" | "name" | "status" | "createdAt"> & { agents: Record<string, AgentView> };

// Code-unit order, not localeCompare: the first localeCompare builds ICU's collator, ~6 ms of a
// ~60 ms `pu status`, and ISO timestamps and ids sort the same either way.
const ordinal = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byStart = (a: AgentView, b: AgentView) => ordinal(a.startedAt, b.startedAt) || ordinal(a.id, b.id);

/** An agent the queue, a group or a plan stopped because its part was done (manifest `finishedBy`). */
function finishedByPu(agent: AgentView): boolean {
  return agent.status === "broken" && typeof agent.finishedBy === "string";
}

function agentRow(worktree: string, agent: AgentView): StatusRow {
  return {
    worktree,
    agent: agent.id,
    name: agent.name,
    type: agent.agentType,
    status: statusLabel(agent),
    host: agent.host ?? "-",
    cost: costCell(agent),
    idle: agent.idleSeconds === null || agent.idleSeconds === undefined ? "-" : formatDuration(agent.idleSeconds),
    // "exit 143" is kept for real failures; pu's own stop after the work is said as such.
    // One its group or plan replaced after a daemon restart names its successor (the agent to look at).
    pidExit: finishedByPu(agent) ? (typeof agent.replacedBy === "string" ? `replaced by ${agent.replacedBy}` : `stopped by ${agent.finishedBy}`) : pidOrExit(agent),
    screen: agent.lastScreenLine ?? "",
  };
}

function costCell(agent: AgentView): string {
  const spent = agent.usage ? formatCost(agent.usage.costUsd) : "-";
  const budget = agent.budget;
  if (!budget || (budget.maxCost === undefined && budget.maxTokens === undefined)) return spent;
  if (budget.maxCost !== undefined) return `${spent}/${formatCost(budget.maxCost)}`;
  const tokens = agent.usage ? budgetTokens(agent.usage) : 0;
  return `${spent} (${formatTokens(tokens)}/${formatTokens(budget.maxTokens!)} tok)`;
}

/**
 * The exit code, else the pid of a process the daemon runs now. A pid the manifest remembers of
 * a process that is gone (a daemon killed under it, a benched agent) is shown as what it was,
 * never as if it still ran.
 */
function pidOrExit(agent: AgentView): string {
  if (agent.exitCode !== undefined && agent.exitCode !== null) return `exit ${agent.exitCode}`;
  if (agent.pid === undefined || agent.pid === null) return "-";
  return agent.live ? String(agent.pid) : `- (was ${agent.pid})`;
}

/** One row per agent: root agents first, then each worktree's (a worktree with no agents still gets a row). */
export function statusRows(report: StatusReport): StatusRow[] {
  const rows: StatusRow[] = Object.values(report.agents).sort(byStart).map((a) => agentRow("(root)", a));
  // protocol's WorktreeView is Omit<> over a loose (index-signature) object, which drops the
  // named fields from its type; the wire value has them, so name the ones the table reads.
  const worktrees = (Object.values(report.worktrees) as unknown as WorktreeShown[]).sort(
    (a, b) => ordinal(a.createdAt, b.createdAt) || ordinal(a.id, b.id),
  );
  for (const wt of worktrees) {
    const label = `${wt.id} ${wt.name}${wt.status === "active" ? "" : ` [${wt.status}]`}`;
    const host = (wt as { host?: string }).host ?? "-";
    const agents = Object.values(wt.agents).sort(byStart);
    if (agents.length === 0) {
      rows.push({ worktree: label, agent: "-", name: "-", type: "-", host, status: "-", idle: "-", cost: "-", pidExit: "-", screen: "" });
    }
    for (const agent of agents) rows.push(agentRow(label, agent));
  }
  return rows;
}

/**
 * The human `pu status` view; colour codes only when `color` (the caller checks TTY and NO_COLOR).
 * Under each agent that shows text, its last screen line, cut to `width`.
 */
export function renderStatusTable(report: StatusReport, { color = false, width = DEFAULT_TABLE_WIDTH }: { color?: boolean; width?: number } = {}): string {
  const rows = statusRows(report);
  // A state file pu cannot use (left as it is) hides or ages rows: said first, one line each.
  const problems = (report.problems ?? []).map((p) => `problem: ${escapeControlCharacters(p)}\n`).join("");
  if (rows.length === 0) return `${problems}no agents in ${report.projectRoot}; start one with \`pu spawn "PROMPT"\`\n`;
  const columns = COLUMNS.filter((c) => (c.key !== "host" || rows.some((r) => r.host !== "-")) && (c.key !== "cost" || rows.some((r) => r.cost !== "-")));
  const cells = rows.map((row) => columns.map((c) => (c.max ? truncate(row[c.key], c.max) : escapeControlCharacters(row[c.key]))));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[], styleOf: (i: number, v: string) => Style | undefined) =>
    values
      .map((v, i) => {
        // Pad before painting so escape codes never count towards the column width.
        const padded = i === values.length - 1 ? v : v.padEnd(widths[i]!);
        const style = styleOf(i, v);
        return style ? paint(padded, style, color) : padded;
      })
      .join("  ")
      .trimEnd();
  const statusColumn = columns.findIndex((c) => c.key === "status");
  const out = [line(columns.map((c) => c.title), () => "bold")];
  const screenWidth = Math.max(10, width - SCREEN_LINE_INDENT.length);
  cells.forEach((r, index) => {
    out.push(line(r, (i, v) => (i === statusColumn ? (v.startsWith("broken (done)") ? "dim" : STATUS_STYLE[v.split(" ")[0]!]) : undefined)));
    const screen = rows[index]!.screen;
    if (screen) out.push(SCREEN_LINE_INDENT + paint(truncate(screen, screenWidth), "dim", color));
  });
  return problems + out.join("\n") + "\n";
}
