import { Command, Option } from "../clipanion.js";
import { formatCost, formatTokens } from "@pu/core/usage";
import { USAGE_GROUPINGS, type UsageGrouping, type UsageRow } from "@pu/ipc/protocol";
import { withDaemon } from "../daemon-client.js";
import { columnLines } from "../definition-commands.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";
import { sinceDay } from "../usage-since.js";

export default class UsageCommand extends PuCommand {
  static override paths = [["usage"]];
  static override usage = Command.Usage({
    description: "Tokens and cost of the project's agents, alive or gone, read from the agent CLIs' own records",
    details: `
      Claude Code, Codex and OpenCode record what each model call used; pu reads those records for
      every agent it started and keeps the figures in \`.pu/usage.json\` (they survive \`pu kill\`,
      \`pu clean\` and restarts). Cost is at the prices of pu's offline table or the project's
      \`prices\` in \`.pu/config.yaml\`; \`?\` means a model has no price. Agents whose program
      left nothing to read (a shell, a custom command) are counted as unknown, never as 0.
      Agents placed on hosts (\`pu spawn --on\`) are counted by their host's daemon and asked for
      here; a host that does not answer is named, not counted as 0.
    `,
    examples: [
      ["Per agent", "$0 usage"],
      ["Per model over the last 7 days", "$0 usage --by model --since 7d"],
      ["Per ticket, as JSON", "$0 usage --by ticket --json"],
    ],
  });

  by = Option.String("--by", "agent", { description: `Rows per ${USAGE_GROUPINGS.join(", ")}` });
  since = Option.String("--since", { description: "From this UTC day on: YYYY-MM-DD, today, or Nd (the last N days)" });

  async run(): Promise<number> {
    if (!(USAGE_GROUPINGS as readonly string[]).includes(this.by)) throw new CliUsageError(`--by expects one of ${USAGE_GROUPINGS.join(", ")}, got "${this.by}"`);
    const by = this.by as UsageGrouping;
    const since = sinceDay(this.since);
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("usage", { projectRoot, by, ...(since ? { since } : {}) }));
    return this.report.result(result, (out) => {
      if (result.rows.length === 0) out.line(since ? `no usage recorded since ${since}` : "no usage recorded yet");
      else {
        const cells = (r: UsageRow) => [formatTokens(r.input), formatTokens(r.cacheRead), formatTokens(r.cacheWrite), formatTokens(r.output), String(r.calls), formatCost(r.costUsd)];
        // Agents on hosts: a HOST column (`-` for this machine) once any row runs elsewhere.
        const hosts = by === "agent" && result.rows.some((r) => r.host !== undefined);
        const head = by === "agent" ? ["AGENT", "NAME", "TYPE", ...(hosts ? ["HOST"] : [])] : [by.toUpperCase()];
        const lead = (r: UsageRow) => (by === "agent" ? [r.key, r.label, r.agentType ?? "", ...(hosts ? [r.host ?? "-"] : [])] : [r.key]);
        const rows = result.rows.map((r) => [...lead(r), ...cells(r)]);
        rows.push([...(by === "agent" ? ["total", "", "", ...(hosts ? [""] : [])] : ["total"]), ...cells(result.total)]);
        // One write: ten thousand agents are ten thousand lines.
        out.line(columnLines([...head, "INPUT", "CACHE READ", "CACHE WRITE", "OUTPUT", "CALLS", "COST"], rows).join("\n"));
      }
      for (const host of result.unansweredHosts ?? []) out.line(`host ${host} did not answer: its agents are not counted here (their figures are kept there; pu host list shows the link)`);
      if (result.unknownAgents > 0) out.line(`${result.unknownAgents} agent${result.unknownAgents === 1 ? "" : "s"} left no usage record (unknown, not counted)`);
    });
  }
}
