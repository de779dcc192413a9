import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { columnLines } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";

export default class QueueShowCommand extends PuCommand {
  static override paths = [["queue", "show"]];
  static override usage = Command.Usage({
    description: "Show the work queue: paused or not, slots, running tickets with step and agent, waiting tickets in order",
    details:
      "Covers every project the daemon knows. Caps: `queue.maxParallel` in $PU_HOME/config.yaml, `queue.maxPerProject` in .pu/config.yaml. Exits 1 when the queue is stopped because $PU_HOME/state.json or $PU_HOME/config.yaml cannot be used (the first line says which and why).",
    examples: [
      ["Show the queue", "$0 queue"],
      ["As JSON", "$0 queue --json"],
    ],
  });

  async run(): Promise<number> {
    const projectRoot = this.project !== undefined || process.env.PU_PROJECT_ROOT ? this.projectRoot() : undefined;
    const result = await withDaemon((client) => client.request("queue_status", projectRoot ? { projectRoot } : {}));
    // Stopped by a file pu cannot use: that is the answer (exit 1), not "running".
    const stopped = result.stateError !== undefined ? `${result.stateError} (fix or move the file, then \`pu daemon restart\`)` : result.configError !== undefined ? `${result.configError} (fix the file, then \`pu queue resume\`)` : undefined;
    // A failing exit says why on stderr too, as every command does (stdout still shows the queue).
    if (stopped !== undefined) this.report.note(`pu: the queue is stopped: ${stopped}`);
    return this.report.result(
      result,
      (out) => {
        if (stopped !== undefined) out.line(`queue STOPPED: ${stopped}`);
        else out.line(`queue ${result.paused ? "PAUSED (pu queue resume)" : "running"}; slots ${result.slotsUsed} used, ${result.slotsFree} free of ${result.maxParallel}`);
        for (const warning of result.warnings) out.line(`warning: ${warning}`);
        if (result.running.length > 0) {
          out.line();
          // A HOST column only once a ticket runs on a host (queue.hosts).
          const onHosts = result.running.some((a) => a.host);
          const rows = result.running.map((a) => [a.ticket_id, a.current_step ?? "-", a.status, a.session_name ?? "-", ...(onHosts ? [a.host ?? "local"] : []), a.llm_tool ?? "-", a.review_state ?? a.last_message ?? ""]);
          for (const line of columnLines(["TICKET", "STEP", "STATUS", "AGENT", ...(onHosts ? ["HOST"] : []), "TOOL", "NOTE"], rows)) out.line(line);
        }
        out.line();
        if (result.waiting.length === 0) out.line("no tickets waiting");
        else for (const line of columnLines(["WAITING", "PRIORITY", "CREATED", "TITLE"], result.waiting.map((t) => [t.id, t.priority, t.created_at, t.title]))) out.line(line);
        for (const p of result.problems) out.line(`problem: ${p.message}`);
      },
      stopped !== undefined ? 1 : 0,
    );
  }
}
