import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class BenchCommand extends PuCommand {
  static override paths = [["bench"]];
  static override usage = Command.Usage({
    description: "Suspend an agent (stop its process, keep it resumable with `pu play`)",
    details:
      "`--all` covers the agents pu placed on hosts too; while it cannot read which those are (remote-projects.json), it benches this machine's, says in one line that the hosts' were not, and exits 1.",
    examples: [
      ["Bench one agent", "$0 bench ag-ab12cd34"],
      ["Bench every agent", "$0 bench --all"],
    ],
  });

  agentId = Option.String({ required: false, name: "ID" });
  all = Option.Boolean("--all", false, { description: "Every live agent" });

  async run(): Promise<number> {
    if ((this.agentId === undefined) === !this.all) {
      throw new CliUsageError(this.all ? "ID and --all cannot be used together" : "say what to bench: an agent ID or --all");
    }
    const projectRoot = this.projectRoot();
    const target = this.all ? "all" : this.agentId!;
    const fields = process.env.PU_AGENT_ID ? { projectRoot, target, callerAgentId: process.env.PU_AGENT_ID } : { projectRoot, target };
    const result = await withDaemon((client) => client.request("suspend", fields));
    const problems = result.problems ?? [];
    return this.report.result(
      result,
      (out) => {
        for (const id of result.suspended) out.line(`benched ${id} (resume with \`pu play ${id}\`)`);
        for (const s of result.skipped) out.line(`skipped ${s.agentId}: ${s.reason}`);
        if (result.suspended.length === 0 && result.skipped.length === 0) out.line(problems.length > 0 ? "nothing to bench on this machine" : "nothing to bench");
        // The JSON document carries them as `problems`.
        for (const problem of problems) this.report.note(`pu: ${problem}`);
      },
      // Not everything asked for was benched, and pu cannot say what is left: a failure.
      problems.length > 0 ? 1 : 0,
    );
  }
}
