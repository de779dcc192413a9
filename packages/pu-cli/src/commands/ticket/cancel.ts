import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { ticketIdArgument } from "@pu/core/ticket";

export default class TicketCancelCommand extends PuCommand {
  static override paths = [["ticket", "cancel"]];
  static override usage = Command.Usage({
    description: "Cancel a ticket: its agent is stopped, its worktree kept, the ticket moved to done/",
    examples: [["Cancel", "$0 ticket cancel FIX-0003"]],
  });

  ticketId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("ticket_cancel", { projectRoot, ticketId: ticketIdArgument(this.ticketId) }));
    return this.report.result(result, (out) => {
      out.line(`cancelled ${result.ticketId}${result.stoppedAgents.length ? `; stopped ${result.stoppedAgents.join(", ")}` : ""}`);
      if (result.worktreePath) out.line(`  worktree kept: ${result.worktreePath} (pu diff / pu merge / pu clean)`);
    });
  }
}
