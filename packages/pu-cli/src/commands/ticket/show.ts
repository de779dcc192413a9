import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { ticketIdArgument } from "@pu/core/ticket";

export default class TicketShowCommand extends PuCommand {
  static override paths = [["ticket", "show"]];
  static override usage = Command.Usage({
    description: "Show a ticket: its fields, description, history, and its agent and step while in progress",
    examples: [["Show a ticket", "$0 ticket show FEAT-0007"]],
  });

  ticketId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("ticket_show", { projectRoot, ticketId: ticketIdArgument(this.ticketId) }));
    return this.report.result(result, (out) => {
      const { ticket, agent, completed } = result;
      out.line(`${ticket.id}  ${ticket.title}`);
      out.line(`  state: ${ticket.state}   priority: ${ticket.priority}   created: ${ticket.created_at}`);
      if (agent) {
        out.line(`  step: ${agent.current_step ?? "-"} (${agent.status})   agent: ${agent.session_name ?? "-"} (${agent.llm_tool ?? "?"})`);
        if (agent.review_state) out.line(`  review: ${agent.review_state}`);
        if (agent.last_message) out.line(`  note: ${agent.last_message}`);
        if (agent.worktree_path) out.line(`  worktree: ${agent.worktree_path}`);
      }
      if (completed) out.line(`  completed ${completed.completed_at}: ${completed.summary.split("\n")[0] ?? ""}`);
      const history = Array.isArray(ticket.history) ? (ticket.history as Record<string, string>[]) : [];
      for (const h of history) out.line(`  ${h.at}  ${h.event}${h.step ? ` [${h.step}]` : ""}${h.by ? ` by ${h.by}` : ""}${h.note ? `: ${h.note}` : ""}`);
      if (ticket.description.trim()) {
        out.line();
        for (const line of ticket.description.trimEnd().split("\n")) out.line(line);
      }
    });
  }
}
