import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { ticketIdArgument } from "@pu/core/ticket";

export default class ReviewRejectCommand extends PuCommand {
  static override paths = [["review", "reject"]];
  static override usage = Command.Usage({
    description: "Reject a waiting ticket: the reason is typed into its agent and the step runs again",
    examples: [
      ["Repeat the step", "$0 review reject FEAT-0007 --reason 'split the migration out'"],
      ["Go back to an earlier step", "$0 review reject FEAT-0007 --reason 'rethink it' --step plan"],
    ],
  });

  ticketId = Option.String({ name: "ID" });
  reason = Option.String("--reason", { required: true, description: "What to change (typed into the agent)" });
  step = Option.String("--step", { description: "Repeat this step instead of the current one" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) =>
      client.request("review_reject", { projectRoot, ticketId: ticketIdArgument(this.ticketId), reason: this.reason, ...(this.step !== undefined ? { step: this.step } : {}) }),
    );
    return this.report.result(result, (out) => out.line(`rejected ${result.ticketId}; step ${result.step} runs again`));
  }
}
