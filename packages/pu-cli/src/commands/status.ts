import { Command, Option } from "../clipanion.js";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { connectDaemon, withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import type { HumanOutput } from "../report.js";
import { renderStatusTable } from "../status-table.js";
import { PuError } from "@pu/core/errors";
import { narrowToAgent } from "@pu/ipc/status-report";

export default class StatusCommand extends PuCommand {
  static override paths = [["status"]];
  static override usage = Command.Usage({
    description: "Show worktrees and agents with their live status",
    details:
      "With `--json` prints the full status report (every manifest field plus live fields). `--watch` redraws on every change until Ctrl-C; on a terminal it also redraws every second while an agent is alive, so IDLE keeps counting. `--watch --json` prints one NDJSON line per change (event-driven, no timer).",
    examples: [
      ["Show everything", "$0 status"],
      ["One agent as JSON", "$0 status --agent ag-ab12cd34 --json"],
      ["Follow changes", "$0 status --watch"],
    ],
  });

  agent = Option.String("--agent", { description: "Only this agent" });
  watch = Option.Boolean("--watch", false, { description: "Keep running and redraw on every change" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    if (this.watch) return this.follow(projectRoot);
    const fields = this.agent === undefined ? { projectRoot } : { projectRoot, agentId: this.agent };
    const report = await withDaemon((client) => client.request("status", fields));
    return this.report.result(report, (out) => out.write(renderStatusTable(report, { color: out.color, width: tableWidth() })));
  }

  private async follow(projectRoot: string): Promise<number> {
    const client = await connectDaemon();
    let interrupted = false;
    const stop = () => {
      interrupted = true;
      client.close();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    // Nothing may change for minutes while agents sit idle: on a terminal the table is redrawn
    // each second from the last report, its idle times advanced by the time since it arrived.
    const ticker = this.report.json || !this.report.out.terminal ? undefined : setInterval(() => this.redrawAged(), 1000);
    try {
      const stream = await client.openStream("subscribe_status", { projectRoot });
      await this.show(stream.result, []);
      for await (const event of stream) {
        if (event.type === "status_event") await this.show(event.report, event.changed);
        else if (event.type === "notice" && event.code === "SHUTDOWN") throw new PuError("DAEMON_UNAVAILABLE", event.message);
      }
    } catch (error) {
      if (!interrupted) throw error;
    } finally {
      if (ticker) clearInterval(ticker);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      client.close();
    }
    if (!interrupted) throw new PuError("DAEMON_UNAVAILABLE", "lost the connection to the pu daemon");
    return 0;
  }

  private last?: { report: StatusReport; at: number };

  private redrawAged(): void {
    if (!this.last) return;
    const elapsed = (Date.now() - this.last.at) / 1000;
    const age = (agent: AgentView): AgentView =>
      agent.live && agent.idleSeconds !== null && agent.idleSeconds !== undefined ? { ...agent, idleSeconds: agent.idleSeconds + elapsed } : agent;
    const { report } = this.last;
    const aged: StatusReport = {
      ...report,
      agents: mapValues(report.agents, age),
      worktrees: mapValues(report.worktrees, (wt) => ({ ...wt, agents: mapValues(wt.agents, age) })),
    };
    if ([...Object.values(aged.agents), ...Object.values(aged.worktrees).flatMap((w) => Object.values(w.agents))].some((a) => a.live)) this.draw(this.report.out, aged);
  }

  private async show(full: StatusReport, changed: unknown[]): Promise<void> {
    // subscribe_status always sends the whole project; an agent not (or no longer) in it shows nothing.
    const report = this.agent === undefined ? full : (narrowToAgent(full, this.agent) ?? { ...full, worktrees: {}, agents: {} });
    await this.report.streamEvent({ report, changed }, (out) => {
      this.last = { report, at: Date.now() };
      this.draw(out, report);
    });
  }

  private draw(out: HumanOutput, report: StatusReport): void {
    // Home + clear on a terminal; a pipe gets successive tables separated by a blank line.
    const frame = renderStatusTable(report, { color: out.color, width: tableWidth() });
    out.write(out.terminal ? `\x1b[H\x1b[2J${frame}\nwatching ${report.projectRoot} (Ctrl-C to stop)\n` : `${frame}\n`);
  }
}

/** The terminal's width, or the table's default when stdout is not a terminal. */
function tableWidth(): number | undefined {
  return process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : undefined;
}

function mapValues<T, U>(record: Record<string, T>, fn: (value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}
