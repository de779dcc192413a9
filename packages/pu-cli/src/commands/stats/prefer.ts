import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class StatsPreferCommand extends PuCommand {
  static override paths = [["stats", "prefer"]];
  static override usage = Command.Usage({
    description: "Set the project's preferred agent type (and model): the queue uses it when a step or ticket names none",
    examples: [["Prefer codex", "$0 stats prefer codex --model gpt-5"]],
  });

  tool = Option.String({ name: "TOOL" });
  model = Option.String("--model", { description: "Preferred model for that tool" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("stats_prefer", { projectRoot, tool: this.tool, ...(this.model !== undefined ? { model: this.model } : {}) }));
    return this.report.result(result, (out) => out.line(`preferred: ${result.preferredTool}${result.preferredModel ? ` (${result.preferredModel})` : ""}`));
  }
}
