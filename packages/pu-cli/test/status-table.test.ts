import { describe, expect, it } from "vitest";
import type { StatusReport } from "@pu/ipc/protocol";
import { agentRow as agent } from "./agent-row.js";
import { colorEnabled } from "../src/output.js";
import { renderStatusTable, statusRows } from "../src/status-table.js";


const report = {
  projectRoot: "/work/app",
  createdAt: "2026-03-08T11:00:00.000Z",
  updatedAt: "2026-03-08T12:10:00.000Z",
  agents: {
    "ag-root0001": agent("ag-root0001", { name: "Researcher", agentType: "claude", status: "waiting", idleSeconds: 95, pid: 4242 }),
  },
  worktrees: {
    "wt-fix00001": {
      id: "wt-fix00001",
      name: "fix-auth",
      path: "/work/app/.pu/worktrees/wt-fix00001",
      branch: "pu/fix-auth",
      status: "active",
      createdAt: "2026-03-08T12:00:00.000Z",
      agents: {
        "ag-late0002": agent("ag-late0002", { startedAt: "2026-03-08T12:05:00.000Z", status: "broken", exitCode: 137, idleSeconds: null, live: false }),
        "ag-first001": agent("ag-first001", { name: "Claude", agentType: "claude", pid: 999, suspended: true, status: "waiting", idleSeconds: 7300 }),
      },
    },
    "wt-empty001": {
      id: "wt-empty001",
      name: "old",
      path: "/work/app/.pu/worktrees/wt-empty001",
      branch: "pu/old",
      status: "merged",
      createdAt: "2026-03-08T12:30:00.000Z",
      agents: {},
    },
  },
} as unknown as StatusReport;

describe("status table", () => {
  it("lists root agents first, then worktrees and their agents in start order", () => {
    const rows = statusRows(report);
    expect(rows.map((r) => [r.worktree, r.agent])).toEqual([
      ["(root)", "ag-root0001"],
      ["wt-fix00001 fix-auth", "ag-first001"],
      ["wt-fix00001 fix-auth", "ag-late0002"],
      ["wt-empty001 old [merged]", "-"],
    ]);
  });

  it("shows idle time, pid or exit code, and benched agents", () => {
    const [root, first, late] = statusRows(report);
    expect(root).toMatchObject({ status: "waiting", idle: "1m35s", pidExit: "4242", type: "claude" });
    expect(first).toMatchObject({ status: "waiting (benched)", idle: "2h01m", pidExit: "999" });
    expect(late).toMatchObject({ status: "broken", idle: "-", pidExit: "exit 137" });
    const succeeded = statusRows({ ...report, agents: { "ag-done0001": agent("ag-done0001", { status: "broken", exitCode: 0, live: false }) }, worktrees: {} } as unknown as StatusReport);
    expect(succeeded[0]).toMatchObject({ status: "broken (exited 0)", pidExit: "exit 0" });
  });

  it("an agent pu stopped after its work reads as finished, not as a failure; a real exit keeps its code", () => {
    const rows = statusRows({
      ...report,
      agents: {
        "ag-done0001": agent("ag-done0001", { status: "broken", exitCode: 143, finishedBy: "queue", live: false }),
        "ag-kill0001": agent("ag-kill0001", { startedAt: "2026-03-08T12:01:00.000Z", status: "broken", exitCode: 143, live: false }),
        // Benched by a daemon stop, then replaced by its group's new agent: the successor is named.
        "ag-repl0001": agent("ag-repl0001", { startedAt: "2026-03-08T12:02:00.000Z", status: "broken", pid: 999, finishedBy: "group", replacedBy: "ag-next0001", live: false }),
      },
      worktrees: {},
    } as unknown as StatusReport);
    expect(rows[0]).toMatchObject({ status: "broken (done)", pidExit: "stopped by queue" });
    expect(rows[1]).toMatchObject({ status: "broken", pidExit: "exit 143" });
    expect(rows[2]).toMatchObject({ status: "broken (done)", pidExit: "replaced by ag-next0001" });
    const coloured = renderStatusTable({ ...report, agents: { "ag-done0001": agent("ag-done0001", { status: "broken", exitCode: 143, finishedBy: "group", live: false }) }, worktrees: {} } as unknown as StatusReport, { color: true });
    expect(coloured).not.toContain("\x1b[31m");
    expect(coloured).toContain("stopped by group");
  });

  it("never shows the pid of a process that is gone as if it ran: a daemon SIGKILLed under it, a benched agent", () => {
    const rows = statusRows({
      ...report,
      agents: {
        "ag-lost0001": agent("ag-lost0001", { status: "broken", pid: 4321, live: false, idleSeconds: null }),
        "ag-bench001": agent("ag-bench001", { status: "waiting", pid: 999, suspended: true, live: false, idleSeconds: null }),
      },
      worktrees: {},
    } as unknown as StatusReport);
    expect(Object.fromEntries(rows.map((r) => [r.agent, r.pidExit]))).toEqual({ "ag-lost0001": "- (was 4321)", "ag-bench001": "- (was 999)" });
  });

  it("says when a waiting agent has finished its turn or asks for permission", () => {
    const only = (fields: Record<string, unknown>) =>
      statusRows({ ...report, agents: { "ag-wait0001": agent("ag-wait0001", { status: "waiting", ...fields }) }, worktrees: {} } as unknown as StatusReport)[0]!.status;
    expect(only({ waitingReason: "turn_end" })).toBe("waiting (done)");
    expect(only({ waitingReason: "permission" })).toBe("waiting (permission)");
    expect(only({ waitingReason: "prompt" })).toBe("waiting");
    expect(only({ waitingReason: "idle" })).toBe("waiting");
  });

  it("renders aligned columns without escape codes when colour is off", () => {
    const text = renderStatusTable(report, { color: false });
    expect(text).not.toMatch(/\x1b/);
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKTREE\s+AGENT\s+NAME\s+TYPE\s+STATUS\s+IDLE\s+PID\/EXIT$/);
    expect(lines).toHaveLength(5);
    const agentColumn = lines[0]!.indexOf("AGENT");
    for (const line of lines.slice(1)) expect(line.slice(agentColumn, agentColumn + 3)).toMatch(/^(ag-|-  )/);
  });

  it("adds a HOST column once an agent runs on a host; an unreachable host's agent keeps its last status, said so", () => {
    const withHost = {
      ...report,
      worktrees: {
        ...report.worktrees,
        "wt-far00001": {
          id: "wt-far00001",
          name: "remote-fix",
          path: "/srv/pu/projects/app-1/.pu/worktrees/wt-far00001",
          branch: "pu/remote-fix",
          status: "active",
          createdAt: "2026-03-08T12:40:00.000Z",
          host: "gpu-box",
          agents: { "ag-far00001": agent("ag-far00001", { status: "streaming", host: "gpu-box", hostState: "unreachable", live: false, idleSeconds: null, pid: 77 }) },
        },
      },
    } as unknown as StatusReport;
    const lines = renderStatusTable(withHost, { color: false }).trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKTREE\s+AGENT\s+NAME\s+TYPE\s+HOST\s+STATUS\s+IDLE\s+PID\/EXIT$/);
    const far = lines.find((l) => l.includes("ag-far00001"))!;
    expect(far).toMatch(/gpu-box\s+streaming \(host unreachable\)\s+-\s+- \(was 77\)/);
    // Agents on this machine read "-" in that column.
    expect(lines.find((l) => l.includes("ag-root0001"))).toMatch(/claude\s+-\s+waiting/);
  });

  it("colours statuses only when asked, keeping the columns aligned", () => {
    const plain = renderStatusTable(report, { color: false });
    const coloured = renderStatusTable(report, { color: true });
    expect(coloured).toContain("\x1b[31mbroken");
    expect(coloured.replace(/\x1b\[\d+m/g, "")).toBe(plain);
  });

  it("never prints a control character from a stored name raw", () => {
    const hostile = {
      ...report,
      agents: { "ag-evil0001": agent("ag-evil0001", { name: "x\x1b]0;pwned\x07\x1b[2Jy\nz" }) },
      worktrees: {},
    } as unknown as StatusReport;
    const out = renderStatusTable(hostile, { color: false });
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(out).toContain("x\\x1b]0;pwned\\x07");
  });

  it("shows each agent's last screen line under its row, cut to the width, columns unchanged", () => {
    const longLine = "Working (12s • esc to interrupt) " + "x".repeat(200);
    const withScreens = {
      ...report,
      agents: {
        "ag-root0001": agent("ag-root0001", { name: "Researcher", agentType: "claude", status: "waiting", pid: 4242, lastScreenLine: "? for shortcuts" }),
        "ag-busy0002": agent("ag-busy0002", { startedAt: "2026-03-08T12:01:00.000Z", agentType: "codex", pid: 4343, lastScreenLine: longLine }),
        "ag-done0003": agent("ag-done0003", { startedAt: "2026-03-08T12:02:00.000Z", status: "broken", exitCode: 0, live: false, lastScreenLine: "" }),
      },
      worktrees: {},
    } as unknown as StatusReport;
    const text = renderStatusTable(withScreens, { color: false });
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKTREE\s+AGENT\s+NAME\s+TYPE\s+STATUS\s+IDLE\s+PID\/EXIT$/);
    expect(lines.slice(1).map((l) => l.trim().split(/\s+/).slice(0, 2).join(" "))).toEqual([
      "(root) ag-root0001",
      "└ ?",
      "(root) ag-busy0002",
      "└ Working",
      "(root) ag-done0003",
    ]);
    expect(lines[2]).toBe("  └ ? for shortcuts");
    // Cut to 80 columns by default, to the terminal's width when given one.
    expect(lines[4]).toHaveLength(80);
    expect(lines[4]!.endsWith("…")).toBe(true);
    const wide = renderStatusTable(withScreens, { color: false, width: 120 }).split("\n")[4]!;
    expect(wide).toHaveLength(120);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    // Dim when coloured; the same text without colour.
    const coloured = renderStatusTable(withScreens, { color: true });
    expect(coloured).toContain("  └ \x1b[2m? for shortcuts\x1b[0m");
    expect(coloured.replace(/\x1b\[\d+m/g, "")).toBe(text);
  });

  it("escapes control characters in a screen line", () => {
    const hostile = { ...report, agents: { "ag-evil0001": agent("ag-evil0001", { lastScreenLine: "a\x1b[2Jb" }) }, worktrees: {} } as unknown as StatusReport;
    const out = renderStatusTable(hostile, { color: false });
    expect(out).not.toMatch(/\x1b/);
    expect(out).toContain("└ a\\x1b[2Jb");
  });

  it("says how to start when there are no agents", () => {
    const empty = { ...report, agents: {}, worktrees: {} } as StatusReport;
    expect(renderStatusTable(empty)).toMatch(/no agents in \/work\/app; start one with `pu spawn/);
  });

  it("colour needs a TTY and no NO_COLOR", () => {
    expect(colorEnabled({ isTTY: true }, {})).toBe(true);
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled({ isTTY: false }, {})).toBe(false);
  });

  it("adds a COST column once an agent has figures, with its budget after a slash and budget as its status", () => {
    const withCost = {
      ...report,
      agents: {
        "ag-root0001": agent("ag-root0001", { status: "waiting", usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: 0.62 }, budget: { maxCost: 0.5, exceededAt: "2026-03-08T12:08:00.000Z" } }),
        "ag-root0002": agent("ag-root0002", { startedAt: "2026-03-08T12:09:00.000Z", usage: { input: 1500, output: 500, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: null }, budget: { maxTokens: 5000 } }),
      },
      worktrees: {},
    } as unknown as StatusReport;
    const table = renderStatusTable(withCost);
    expect(table.split("\n")[0]).toMatch(/IDLE\s+COST\s+PID\/EXIT/);
    expect(table).toMatch(/ag-root0001 .*budget .*\$0\.62\/\$0\.50/);
    expect(table).toMatch(/ag-root0002 .*\? \(2\.0k\/5\.0k tok\)/);
    // No agent with figures: no column.
    expect(renderStatusTable(report).split("\n")[0]).not.toContain("COST");
  });

  it("a state file pu cannot use is one problem line above the table (and above 'no agents')", () => {
    const text = renderStatusTable({ ...report, problems: ["hosts.json: not valid JSON"] }, { color: false });
    expect(text.split("\n")[0]).toBe("problem: hosts.json: not valid JSON");
    expect(text.split("\n")[1]).toMatch(/^WORKTREE/);
    expect(renderStatusTable({ ...report, agents: {}, worktrees: {}, problems: ["x"] }).split("\n").slice(0, 2)).toEqual(["problem: x", expect.stringMatching(/^no agents/)]);
  });
});

