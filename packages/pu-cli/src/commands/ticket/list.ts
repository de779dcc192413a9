import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { columnLines } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";
import { CliUsageError } from "../../usage-error.js";

const STATES = ["queue", "in-progress", "done"] as const;

export default class TicketListCommand extends PuCommand {
  static override paths = [["ticket", "list"]];
  static override usage = Command.Usage({
    description: "List the project's tickets (queue in dispatch order, then in-progress, then done)",
    details:
      "A ticket file pu cannot use (bad frontmatter, over 1 MiB, an id another ticket already has) is listed as a problem line naming the file and why; it stays where it is and never runs.",
    examples: [
      ["All tickets", "$0 ticket list"],
      ["Only the waiting ones", "$0 ticket list --state queue"],
    ],
  });

  state = Option.String("--state", { description: "queue, in-progress or done" });

  async run(): Promise<number> {
    if (this.state !== undefined && !(STATES as readonly string[]).includes(this.state)) throw new CliUsageError(`--state must be one of ${STATES.join(", ")}`);
    const projectRoot = this.projectRoot();
    const state = this.state as (typeof STATES)[number] | undefined;
    const result = await withDaemon((client) => client.request("ticket_list", { projectRoot, ...(state ? { state } : {}) }));
    return this.report.result(result, (out) => {
      if (result.tickets.length === 0) out.line("no tickets");
      else for (const line of columnLines(["ID", "STATE", "PRIORITY", "CREATED", "TITLE"], result.tickets.map((t) => [t.id, t.state, t.priority, t.created_at, t.title]))) out.line(line);
      for (const p of result.problems) out.line(`problem: ${p.message}`);
    });
  }
}
