import type { GateRun } from "@pu/ipc/protocol";
import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

const TAIL_LINES = 10;

export default class TriggerLogCommand extends PuCommand {
  static override paths = [["trigger", "log"]];
  static override usage = Command.Usage({
    description: "Show an agent's gate runs (oldest first)",
    details: "Each run: when it started, the trigger and step, the command, its exit code and duration, and the end of its output. `--json` prints the records as stored.",
    examples: [
      ["Gate runs of an agent", "$0 trigger log ag-ab12cd34"],
      ["As JSON", "$0 trigger log ag-ab12cd34 --json"],
    ],
  });

  agentId = Option.String({ name: "AGENT" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("trigger_log", { projectRoot, agentId: this.agentId }));
    return this.report.result(result, (out) => {
      if (result.runs.length === 0) {
        out.line(`no gate runs for ${this.agentId}`);
        return;
      }
      result.runs.forEach((run, i) => {
        if (i > 0) out.line();
        for (const line of describeGateRun(run)) out.line(line);
      });
    });
  }
}

export function describeGateRun(
  run: Pick<GateRun, "startedAt" | "triggerName" | "command" | "exitCode" | "passed" | "timedOut" | "durationMs" | "outputTail"> & {
    seqIndex?: number;
  },
): string[] {
  const step = run.seqIndex === undefined ? "" : ` step ${run.seqIndex + 1}`;
  const verdict = run.passed ? "passed" : "failed";
  const outcome = `${verdict} (${run.timedOut ? "timed out" : run.exitCode === null ? "killed" : `exit ${run.exitCode}`})`;
  const lines = [`${run.startedAt}  ${run.triggerName}${step}  ${outcome}  ${formatDuration(run.durationMs)}`, `  $ ${run.command}`];
  const tail = run.outputTail.replace(/\s+$/, "").split("\n").slice(-TAIL_LINES);
  if (tail.length > 1 || tail[0] !== "") for (const line of tail) lines.push(`  | ${line}`);
  return lines;
}

function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}
