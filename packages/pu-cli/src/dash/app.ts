// `pu dash`: a full-screen dashboard (Ink). Left: every agent with its live state; right: the
// selected agent's rendered screen from the daemon's screen model; bottom: the keys. Data comes
// from `subscribe_status` streams (one per project) and, for the selected agent, a `logs
// --screen` request whenever its content hash changes: no polling.
import { spawn } from "node:child_process";
import { findExecutable } from "@pu/core/executables";
import type { Client } from "@pu/ipc/client";
import type { StatusReport } from "@pu/ipc/protocol";
import React from "react";
import { Box, render, Text, useInput, type Instance } from "ink";
import { tryConnectDaemon } from "../daemon-client.js";
import { dashProblems, dashRows, newlyWaiting, problemLines, statusLabel, type DashRow } from "./model.js";

const h = React.createElement;
const ENTER_ALT = "\x1b[?1049h\x1b[H";
const LEAVE_ALT = "\x1b[?1049l\x1b[?25h";
const RECONNECT_MS = 1000;

export interface DashOptions {
  /** Project roots to show; undefined: every project the daemon knows. */
  projectRoots?: string[];
  bell: boolean;
  /** The agent to select first (after an attach, the one attached to). */
  select?: string;
}

type Mode =
  | { kind: "list" }
  | { kind: "confirm"; action: "kill" | "merge" | "clean"; row: DashRow }
  | { kind: "send"; row: DashRow; text: string }
  | { kind: "filter"; text: string }
  | { kind: "help" }
  | { kind: "diff"; title: string; lines: string[]; top: number };

class Dashboard {
  reports = new Map<string, StatusReport>();
  rows: DashRow[] = [];
  selected = 0;
  filter = "";
  mode: Mode = { kind: "list" };
  screen: string[] = [];
  /** What the right pane shows: the selected agent's screen, the work queue, or plan sessions. */
  tab: "screen" | "queue" | "plans" | "groups" = "screen";
  tabLines: string[] = [];
  screenFor: { agentId: string; hash: string | undefined } | undefined;
  message = "";
  connected = false;
  private client: Client | undefined;
  private instance: Instance | undefined;
  private done!: (code: number) => void;
  private readonly finished = new Promise<number>((resolve) => (this.done = resolve));
  private closed = false;

  private selectWanted: string | undefined;

  constructor(private readonly options: DashOptions) {
    this.selectWanted = options.select;
  }

  async run(): Promise<number> {
    // Raw before the first frame: a key pressed as soon as the list shows must not wait in the
    // terminal's line buffer for an Enter.
    process.stdin.setRawMode?.(true);
    process.stdout.write(ENTER_ALT);
    const restore = () => process.stdout.write(LEAVE_ALT);
    process.once("exit", restore);
    const onSignal = () => this.quit(0);
    process.once("SIGTERM", onSignal);
    process.once("SIGHUP", onSignal);
    process.stdout.on("resize", () => this.draw());
    this.mount();
    void this.connectLoop();
    const code = await this.finished;
    this.instance?.unmount();
    // Handing the terminal to `pu attach`: keys typed meanwhile stay raw bytes for it, never a
    // Ctrl-\ or Ctrl-C signal to the processes in between.
    if (this.handOff) process.stdin.setRawMode?.(true);
    this.client?.close();
    process.off("SIGTERM", onSignal);
    process.off("SIGHUP", onSignal);
    restore();
    process.off("exit", restore);
    return code;
  }

  quit(code: number): void {
    if (this.closed) return;
    this.closed = true;
    this.done(code);
  }

  private mount(): void {
    this.instance = render(h(DashView, { dash: this }), { exitOnCtrlC: false, patchConsole: false });
  }

  draw(): void {
    if (this.closed) return;
    this.instance?.rerender(h(DashView, { dash: this }));
  }

  // ---- data ----

  private async connectLoop(): Promise<void> {
    while (!this.closed) {
      const client = await tryConnectDaemon().catch(() => undefined);
      if (!client) {
        this.connected = false;
        this.message = "pu daemon is not running; waiting for it (start it with `pu daemon start`)…";
        this.draw();
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
        continue;
      }
      this.client = client;
      this.connected = true;
      this.message = "";
      try {
        const roots = this.options.projectRoots ?? (await client.request("health", {})).projects;
        await Promise.all(roots.map((root) => this.follow(client, root)));
      } catch {
        // the connection went away
      }
      client.close();
      this.client = undefined;
      if (this.closed) return;
      this.connected = false;
      this.message = "lost the pu daemon (restarted?); reconnecting…";
      this.draw();
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }

  private async follow(client: Client, root: string): Promise<void> {
    const stream = await client.openStream("subscribe_status", { projectRoot: root });
    this.update(root, stream.result);
    for await (const event of stream) {
      if (this.closed) return;
      if (event.type === "status_event") this.update(root, event.report);
      else if (event.type === "notice" && event.code === "SHUTDOWN") return;
    }
  }

  private update(root: string, report: StatusReport): void {
    const before = this.rows;
    const selectedId = this.selectWanted ?? this.current()?.agentId;
    this.reports.set(root, report);
    this.rows = dashRows([...this.reports.values()], this.filter);
    const index = selectedId ? this.rows.findIndex((r) => r.agentId === selectedId) : -1;
    this.selected = index >= 0 ? index : Math.min(this.selected, Math.max(0, this.rows.length - 1));
    if (index >= 0) this.selectWanted = undefined;
    const waiting = newlyWaiting(before, this.rows);
    if (waiting.length > 0) this.announce(waiting);
    void this.refreshScreen();
    void this.refreshTab();
    this.draw();
  }

  /** An agent needs the person: the terminal bell once, and a desktop notification where one exists. */
  private announce(rows: DashRow[]): void {
    if (!this.options.bell) return;
    process.stdout.write("\x07");
    this.notifier ??= findExecutable("notify-send", process.cwd(), process.env.PATH) ?? "";
    const notifier = this.notifier;
    if (notifier) {
      for (const r of rows) spawn(notifier, ["pu", `${r.name} (${r.agentId}) is waiting`], { stdio: "ignore", detached: true }).unref();
    }
  }

  /** `notify-send`'s path, looked up once ("" when there is none). */
  private notifier: string | undefined;

  current(): DashRow | undefined {
    return this.rows[this.selected];
  }

  private async refreshScreen(): Promise<void> {
    const row = this.current();
    const client = this.client;
    if (!row || !client) {
      this.screen = [];
      this.screenFor = undefined;
      return;
    }
    if (this.screenFor?.agentId === row.agentId && this.screenFor.hash === row.contentHash) return;
    this.screenFor = { agentId: row.agentId, hash: row.contentHash };
    try {
      const result = await client.request("logs", { agentId: row.agentId, screen: true });
      if (this.current()?.agentId !== row.agentId) return;
      this.screen = result.screen?.lines ?? [];
    } catch (error) {
      this.screen = [`(no screen: ${(error as Error).message})`];
    }
    this.draw();
  }

  /** The queue, plans or groups tab, read from the daemon (on switching to it and on each status change). */
  async refreshTab(): Promise<void> {
    const client = this.client;
    if (!client || this.tab === "screen") return;
    const roots = [...this.reports.keys()];
    const lines: string[] = [];
    try {
      if (this.tab === "queue") {
        const q = await client.request("queue_status", roots.length === 1 ? { projectRoot: roots[0]! } : {});
        const stopped = q.stateError ?? q.configError;
        lines.push(stopped !== undefined ? `queue STOPPED: ${stopped}` : `queue ${q.paused ? "PAUSED" : "running"}: ${q.slotsUsed}/${q.maxParallel} slots used`);
        for (const p of q.problems) lines.push(`problem: ${p.message}`);
        for (const a of q.running) lines.push(`  ${a.ticket_id}  ${a.status}  step ${a.current_step ?? "-"}  ${a.session_name ?? ""}${a.host ? ` on ${a.host}` : ""}${a.review_state ? `  review: ${a.review_state}` : ""}`);
        if (q.waiting.length > 0) lines.push("waiting:");
        for (const t of q.waiting) lines.push(`  ${t.id}  ${t.priority}  ${t.title}`);
        if (q.running.length === 0 && q.waiting.length === 0) lines.push("no tickets (pu ticket create TITLE --type FEAT)");
      } else if (this.tab === "groups") {
        for (const root of roots) {
          const { groups } = await client.request("group_list", { projectRoot: root });
          for (const group of groups) {
            const done = group.members.filter((m) => m.state === "done").length;
            lines.push(`${group.groupId}  ${group.phase}  ${done}/${group.members.length} done  ${group.kind}, ${group.aggregate}${group.winner ? `  winner ${group.winner}` : ""}`);
            for (const m of group.members) lines.push(`  ${m.state.padEnd(9)} ${m.variant}${m.agentId ? ` [${m.agentId}]` : ""}${m.host ? ` on ${m.host}` : ""}${m.reason ? `  ${m.reason}` : ""}`);
          }
        }
        if (lines.length === 0) lines.push("no groups (pu group run PROMPT --agents a,b)");
      } else {
        for (const root of roots) {
          const { plans } = await client.request("plan_list", { projectRoot: root });
          for (const plan of plans) {
            const done = plan.tasks.filter((t) => t.status === "resolved").length;
            lines.push(`${plan.sessionId}  ${plan.phase}  ${done}/${plan.tasks.length} tasks  ${plan.goal.split("\n")[0] ?? ""}`);
            for (const t of plan.tasks) lines.push(`  ${t.status.padEnd(11)} ${t.id}${t.worker ? ` [${t.worker}]` : ""}${t.host ? ` on ${t.host}` : ""}`);
          }
        }
        if (lines.length === 0) lines.push("no plan sessions (pu plan start GOAL)");
      }
    } catch (error) {
      lines.push(`(${(error as Error).message})`);
    }
    this.tabLines = lines;
    this.draw();
  }

  nextTab(): void {
    const order = ["screen", "queue", "plans", "groups"] as const;
    this.tab = order[(order.indexOf(this.tab) + 1) % order.length] ?? "screen";
    this.tabLines = [];
    void this.refreshTab();
    this.draw();
  }

  // ---- keys ----

  move(delta: number): void {
    if (this.rows.length === 0) return;
    this.selected = Math.max(0, Math.min(this.rows.length - 1, this.selected + delta));
    void this.refreshScreen();
    this.draw();
  }

  setFilter(text: string): void {
    this.filter = text;
    this.rows = dashRows([...this.reports.values()], this.filter);
    this.selected = Math.min(this.selected, Math.max(0, this.rows.length - 1));
    void this.refreshScreen();
  }

  async act(action: "kill" | "merge" | "clean" | "bench" | "play" | "diff", row: DashRow): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      if (action === "kill") {
        await client.request("kill", { projectRoot: row.projectRoot, target: row.agentId });
        this.message = `killed ${row.agentId}`;
      } else if (action === "bench") {
        await client.request("suspend", { projectRoot: row.projectRoot, target: row.agentId });
        this.message = `benched ${row.agentId}`;
      } else if (action === "play") {
        await client.request("resume", { projectRoot: row.projectRoot, agentId: row.agentId });
        this.message = `resumed ${row.agentId}`;
      } else if (!row.worktreeId) {
        this.message = `${row.agentId} runs at the project root: no worktree to ${action}`;
      } else if (action === "merge") {
        const merged = await client.request("merge", { projectRoot: row.projectRoot, worktreeId: row.worktreeId });
        this.message = merged.nothingToMerge ? `${row.place}: nothing to merge` : `merged ${row.place} into ${merged.baseBranch}`;
      } else if (action === "clean") {
        await client.request("clean", { projectRoot: row.projectRoot, worktreeId: row.worktreeId });
        this.message = `cleaned ${row.place}`;
      } else if (action === "diff") {
        const diff = await client.request("diff", { projectRoot: row.projectRoot, worktreeId: row.worktreeId });
        const text = diff.worktrees.map((w) => w.patch ?? "").join("\n");
        this.mode = { kind: "diff", title: `diff of ${row.place}`, lines: text ? text.split("\n") : ["(no changes)"], top: 0 };
      }
    } catch (error) {
      const details = (error as { details?: { conflicts?: string[] } }).details;
      this.message = details?.conflicts ? `merge conflicts in: ${details.conflicts.join(", ")}` : `${action} failed: ${(error as Error).message}`;
    }
    this.draw();
  }

  async send(row: DashRow, text: string): Promise<void> {
    try {
      await this.client?.request("type_text", { agentId: row.agentId, text, submit: true });
      this.message = `sent to ${row.agentId}`;
    } catch (error) {
      this.message = `send failed: ${(error as Error).message}`;
    }
    this.draw();
  }

  /**
   * Enter: the dashboard ends and hands the terminal over whole (Ink draws asynchronously, so
   * no frame of it can land on the agent's screen); `pu dash` runs `pu attach`, then starts the
   * dashboard again on the same agent.
   */
  attach(row: DashRow): void {
    this.handOff = { attach: row.agentId };
    this.quit(0);
  }

  /** What `pu dash` should do when this process ends (see main.ts). */
  handOff: { attach: string } | undefined;
}

const STATUS_COLOR: Record<string, string> = { streaming: "green", waiting: "yellow", broken: "red", benched: "gray" };
const TAB_TITLES = { screen: "", queue: "work queue (tab: plans)", plans: "plan sessions (tab: groups)", groups: "multi-agent groups (tab: screen)" } as const;
const KEYS = "q quit  ? help  ↑↓/jk select  ⏎ attach  s send  K kill  d diff  m merge  c clean  b bench  p play  tab screen/queue/plans/groups  n new  / filter";

type InkKey = Parameters<Parameters<typeof useInput>[0]>[1];
const NO_KEY = {} as InkKey;

/** A key in the list: move, act on the selected agent, or open a prompt. */
function listKey(dash: Dashboard, input: string, key: InkKey): void {
  const row = dash.current();
  // A message stays until the next key; then the keys line is back.
  dash.message = "";
  if (input === "q" || (key.ctrl && input === "c")) return dash.quit(0);
  if (key.upArrow || input === "k") return dash.move(-1);
  if (key.downArrow || input === "j") return dash.move(1);
  if (key.tab || input === "t") return dash.nextTab();
  if (input === "?") dash.mode = { kind: "help" };
  else if (input === "/") dash.mode = { kind: "filter", text: dash.filter };
  else if (row && key.return) return dash.attach(row);
  else if (row && input === "K") dash.mode = { kind: "confirm", action: "kill", row };
  else if (row && input === "m") dash.mode = { kind: "confirm", action: "merge", row };
  else if (row && input === "c") dash.mode = { kind: "confirm", action: "clean", row };
  else if (row && input === "s") dash.mode = { kind: "send", row, text: "" };
  else if (row && input === "b") void dash.act("bench", row);
  else if (row && input === "p") void dash.act("play", row);
  else if (row && input === "d") void dash.act("diff", row);
  else if (input === "n") dash.message = "new agent: run `pu spawn \"PROMPT\" --agent TYPE` in another terminal (it shows up here)";
  dash.draw();
}

function DashView({ dash }: { dash: Dashboard }): React.ReactElement {
  const width = process.stdout.columns || 80;
  const height = process.stdout.rows || 24;
  // The list keeps its columns whole when it can; the screen gets the rest (at least 24 columns).
  const listWidth = Math.max(20, Math.min(width - 24, Math.max(56, Math.floor(width * 0.45))));
  // What pu could not read, a line each above the keys: at most 3 (fewer on a short terminal).
  const problems = problemLines(dashProblems([...dash.reports.values()]), Math.max(1, Math.min(3, height - 9)));
  const bodyHeight = Math.max(3, height - 3 - problems.length);
  const screenWidth = Math.max(1, width - listWidth - 1);
  // Lines are cut here, to the cell: Ink's own truncation measured some rows as one column wide.
  const fit = (text: string, cells: number) => (text.length > cells ? `${text.slice(0, Math.max(0, cells - 1))}…` : text);
  const mode = dash.mode;

  useInput(
    (input, key) => {
    if (mode.kind === "confirm") {
      dash.mode = { kind: "list" };
      if (input === "y") void dash.act(mode.action, mode.row);
      else dash.message = `${mode.action} cancelled`;
      dash.draw();
      return;
    }
    if (mode.kind === "send" || mode.kind === "filter") {
      // Pasted or fast-typed text may arrive with its Enter in the same chunk.
      const enterAt = input.search(/[\r\n]/);
      const typed = enterAt >= 0 ? input.slice(0, enterAt) : input;
      const text = key.ctrl || key.meta ? mode.text : mode.text + typed;
      if (key.escape) dash.mode = { kind: "list" };
      else if (key.return || enterAt >= 0) {
        dash.mode = { kind: "list" };
        if (mode.kind === "send" && text) void dash.send(mode.row, text);
        if (mode.kind === "filter") dash.setFilter(text);
      } else if (key.backspace || key.delete) dash.mode = { ...mode, text: mode.text.slice(0, -1) };
      else dash.mode = { ...mode, text };
      dash.draw();
      return;
    }
    if (mode.kind === "help") {
      dash.mode = { kind: "list" };
      dash.draw();
      return;
    }
    if (mode.kind === "diff") {
      if (key.upArrow || input === "k") dash.mode = { ...mode, top: Math.max(0, mode.top - 1) };
      else if (key.downArrow || input === "j") dash.mode = { ...mode, top: Math.min(Math.max(0, mode.lines.length - bodyHeight), mode.top + 1) };
      else if (key.pageDown || input === " ") dash.mode = { ...mode, top: Math.min(Math.max(0, mode.lines.length - bodyHeight), mode.top + bodyHeight) };
      else if (key.pageUp) dash.mode = { ...mode, top: Math.max(0, mode.top - bodyHeight) };
      else dash.mode = { kind: "list" };
      dash.draw();
      return;
    }
    // Keys typed faster than they are read arrive as one chunk ("jj"): one at a time here.
    if (input.length > 1 && !key.ctrl && !key.meta && !/[\r\n]/.test(input)) {
      for (const ch of input) listKey(dash, ch, NO_KEY);
    } else listKey(dash, input, key);
    dash.draw();
    },
  );

  const list = dash.rows.length === 0
    ? [h(Text, { key: "empty", dimColor: true }, dash.connected ? "no agents (pu spawn \"PROMPT\" starts one)" : "…")]
    : dash.rows.slice(Math.max(0, dash.selected - bodyHeight + 1), Math.max(0, dash.selected - bodyHeight + 1) + bodyHeight).map((r) => {
        const selected = r.agentId === dash.current()?.agentId;
        const label = statusLabel(r);
        const needsYou = r.status === "waiting" && r.live;
        const text = fit(`${r.place.slice(0, 10).padEnd(10)} ${r.name.slice(0, 10).padEnd(10)} ${r.agentType.slice(0, 8).padEnd(8)} ${label.padEnd(15)} ${r.idle.padEnd(6)} ${r.cost}`, listWidth - 2);
        return h(
          Text,
          { key: r.agentId, inverse: selected, bold: needsYou },
          h(Text, { color: r.finishedBy !== undefined ? "gray" : (STATUS_COLOR[r.status] ?? "white") }, "● "),
          text,
        );
      });

  let right: React.ReactElement[];
  if (mode.kind === "diff") {
    right = [h(Text, { key: "t", bold: true }, mode.title), ...mode.lines.slice(mode.top, mode.top + bodyHeight - 1).map((l, i) => h(Text, { key: i, color: l.startsWith("+") ? "green" : l.startsWith("-") ? "red" : undefined }, fit(l, screenWidth) || " "))];
  } else if (mode.kind === "help") {
    right = KEYS.split("  ").map((k, i) => h(Text, { key: i }, fit(k, screenWidth)));
  } else if (dash.tab !== "screen") {
    right = [h(Text, { key: "t", bold: true }, fit(TAB_TITLES[dash.tab], screenWidth)), ...dash.tabLines.slice(0, bodyHeight - 1).map((l, i) => h(Text, { key: i }, fit(l, screenWidth) || " "))];
  } else {
    const current = dash.current();
    const lines = [...dash.screen];
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    const shown = lines.slice(Math.max(0, lines.length - (bodyHeight - 1)));
    right = [h(Text, { key: "t", bold: true }, fit(current ? `${current.agentId} ${current.name}` : "", screenWidth)), ...shown.map((l, i) => h(Text, { key: i }, fit(l, screenWidth) || " "))];
  }

  let bottom: string = dash.message || KEYS;
  if (mode.kind === "confirm") bottom = `${mode.action} ${mode.action === "kill" ? mode.row.agentId : mode.row.place}? y/n`;
  if (mode.kind === "send") bottom = `send to ${mode.row.agentId}: ${mode.text}▏ (Enter sends, Esc cancels)`;
  if (mode.kind === "filter") bottom = `filter: ${mode.text}▏ (Enter applies, Esc cancels)`;

  return h(
    Box,
    { flexDirection: "column", width, height },
    h(
      Box,
      { flexDirection: "row", height: bodyHeight },
      h(Box, { flexDirection: "column", width: listWidth, flexShrink: 0 }, ...list),
      h(Box, { flexDirection: "column", width: screenWidth, flexShrink: 0, marginLeft: 1 }, ...right),
    ),
    ...problems.map((line, i) => h(Text, { key: `problem-${i}`, color: "red" }, fit(line, width))),
    h(Text, { color: mode.kind === "confirm" ? "yellow" : undefined, dimColor: !dash.message && mode.kind === "list" }, fit(bottom, width)),
  );
}

export async function runDashboard(options: DashOptions): Promise<{ code: number; handOff?: { attach: string } }> {
  const dash = new Dashboard(options);
  const code = await dash.run();
  return dash.handOff ? { code, handOff: dash.handOff } : { code };
}
