import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writeGroupSummary } from "../../group-view.js";
import { PuCommand } from "../../pu-command.js";

export default class GroupListCommand extends PuCommand {
  static override paths = [["group", "list"]];
  static override usage = Command.Usage({
    description: "List the project's multi-agent groups, oldest first",
    examples: [["Every group and its phase", "$0 group list"]],
  });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("group_list", { projectRoot }));
    for (const problem of result.unreadable) this.report.note(`pu: a group in state.json is not one pu can read (left as it is): ${problem}`);
    return this.report.result(result, (out) => {
      if (result.groups.length === 0) out.line("no groups (start one with `pu group run PROMPT --agents a,b`)");
      for (const group of result.groups) writeGroupSummary(out, group);
    });
  }
}
