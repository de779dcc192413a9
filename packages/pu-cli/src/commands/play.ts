import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";

export default class PlayCommand extends PuCommand {
  static override paths = [["play"]];
  static override usage = Command.Usage({
    description: "Resume a benched agent with its agent type's resume command",
    examples: [["Resume an agent", "$0 play ag-ab12cd34"]],
  });

  agentId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) =>
      client.request("resume", { projectRoot, agentId: this.agentId }),
    );
    return this.report.result(result, (out) =>
      out.line(`resumed ${result.agent.id} (${result.agent.agentType}); attach with \`pu attach ${result.agent.id}\``),
    );
  }
}
