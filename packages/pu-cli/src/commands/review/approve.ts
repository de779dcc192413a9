import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { ticketIdArgument } from "@pu/core/ticket";

export default class ReviewApproveCommand extends PuCommand {
  static override paths = [["review", "approve"]];
  static override usage = Command.Usage({
    description: "Approve a waiting ticket: it goes on with its next step (kept in the ticket's history)",
    examples: [["Approve", "$0 review approve FEAT-0007 --note 'plan looks good'"]],
  });

  ticketId = Option.String({ name: "ID" });
  note = Option.String("--note", { description: "Kept in the ticket's history" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) =>
      client.request("review_approve", { projectRoot, ticketId: ticketIdArgument(this.ticketId), ...(this.note !== undefined ? { note: this.note } : {}) }),
    );
    return this.report.result(result, (out) => out.line(`approved ${result.ticketId}${result.step ? ` (step ${result.step})` : ""}`));
  }
}
