import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { CliUsageError } from "../../usage-error.js";

export default class PlanCheckCommand extends PuCommand {
  static override paths = [["plan", "check"]];
  static override usage = Command.Usage({
    description: "From a plan worker: have pu run a check in your worktree and record it as your task's evidence",
    details:
      "The daemon runs CMD with `/bin/sh -c` in the worker's worktree (the worker is known by its PU_AGENT_ID) and records exit code, duration and the output's tail in the session's evidence log, a failure too. The output is printed and the exit code is the command's.",
    examples: [["Prove the tests pass", '$0 plan check "npm test"']],
  });

  command = Option.String({ name: "CMD" });

  async run(): Promise<number> {
    const agentId = process.env.PU_AGENT_ID;
    if (!agentId) throw new CliUsageError("pu plan check runs inside a plan worker (PU_AGENT_ID is not set)");
    const result = await withDaemon((client) => client.request("plan_check", { agentId, command: this.command }), { autoStart: false });
    return this.report.result(result, (out) => {
      out.write(result.output);
      out.line(`pu: ${this.command}: exit ${result.exitCode} (recorded for task ${result.taskId})`);
    }, result.exitCode === 0 ? 0 : 1);
  }
}
