import { formatCost, formatTokens } from "@pu/core/usage";
import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { columnLines } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";

export default class StatsShowCommand extends PuCommand {
  static override paths = [["stats", "show"]];
  static override usage = Command.Usage({
    description: "Usage per agent type and model in this project: runs, successes, failures, time, last used",
    details: "Recorded on every agent exit (spawned by you or by the queue). A success is an exit with code 0, or an agent the queue stopped after its work was done.",
    examples: [
      ["The table", "$0 stats"],
      ["As JSON", "$0 stats --json"],
    ],
  });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("stats", { projectRoot }));
    return this.report.result(result, (out) => {
      const preferred = result.stats?.preferred_tool;
      if (preferred) out.line(`preferred: ${preferred}${result.stats?.preferred_model ? ` (${result.stats.preferred_model})` : ""}`);
      if (result.rows.length === 0) return out.line("no agent runs recorded yet");
      const rows = result.rows.map((r) => [r.tool, r.model, String(r.runs), String(r.successes), String(r.failures), `${r.totalSeconds}s`, r.tokens === null ? "-" : formatTokens(r.tokens), r.tokens === null ? "-" : formatCost(r.costUsd), r.lastUsed]);
      for (const line of columnLines(["TOOL", "MODEL", "RUNS", "OK", "FAILED", "TIME", "TOKENS", "COST", "LAST USED"], rows)) out.line(line);
    });
  }
}
