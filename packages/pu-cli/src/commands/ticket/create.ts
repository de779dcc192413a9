import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { positiveNumberOption, wholeNumberOption } from "../../number-options.js";
import { PuCommand } from "../../pu-command.js";
import { readFileOption } from "../../read-file-option.js";
import { CliUsageError } from "../../usage-error.js";

const PRIORITIES = ["P0", "P1", "P2", "P3"] as const;

export default class TicketCreateCommand extends PuCommand {
  static override paths = [["ticket", "create"]];
  static override usage = Command.Usage({
    description: "Queue a ticket: an agent works it through its type's workflow",
    details: `
      Writes \`.pu/tickets/queue/TYPE-NNNN.md\` (frontmatter and the description as body); the daemon
      dispatches it when a slot is free and the queue is not paused. The description comes from
      \`--file PATH\` or stdin (\`--file -\`); a ticket file is at most 1 MiB. The title is one line
      of printable text; \`--agent\` must name a known agent type. Run inside a pu agent working a
      ticket, the new ticket is recorded as that ticket's output ticket.
    `,
    examples: [
      ["A feature", "$0 ticket create 'Add dark mode' --type FEAT --priority P1"],
      ["A fix with a description from a file", "$0 ticket create 'Crash on empty input' --type FIX --file bug.md"],
      ["At most $3 of tokens; past it the ticket waits for your review", "$0 ticket create 'Port the parser' --type FEAT --max-cost 3"],
    ],
  });

  title = Option.String({ name: "TITLE" });
  type = Option.String("--type", "TASK", { description: "Ticket type = workflow: FEAT, FIX, TASK, SPIKE or your own (default TASK)" });
  priority = Option.String("--priority", "P2", { description: "P0 (first) to P3 (default P2)" });
  file = Option.String("--file", { description: "Read the description from this file (- for stdin)" });
  agent = Option.String("--agent", { description: "Agent type for this ticket (else the workflow's, the preferred tool, the default agent)" });
  model = Option.String("--model", { description: "Model for this ticket's agent" });
  maxCost = Option.String("--max-cost", { description: "Budget in US dollars over all the ticket's steps (crossed: the turn is interrupted, the ticket waits for review)" });
  maxTokens = Option.String("--max-tokens", { description: "Budget in tokens (input, cache, output) over all the ticket's steps" });

  async run(): Promise<number> {
    const priority = this.priority.toUpperCase();
    if (!(PRIORITIES as readonly string[]).includes(priority)) throw new CliUsageError(`--priority must be one of ${PRIORITIES.join(", ")}`);
    const maxCost = positiveNumberOption("--max-cost", this.maxCost);
    const maxTokens = wholeNumberOption("--max-tokens", this.maxTokens, 1);
    const description = this.file !== undefined ? readFileOption(this.file) : undefined;
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) =>
      client.request("ticket_create", {
        projectRoot,
        title: this.title,
        ticketType: this.type.toUpperCase(),
        priority: priority as (typeof PRIORITIES)[number],
        ...(description !== undefined ? { description } : {}),
        ...(this.agent !== undefined ? { agent: this.agent } : {}),
        ...(this.model !== undefined ? { model: this.model } : {}),
        ...(maxCost !== undefined ? { maxCost } : {}),
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        ...(process.env.PU_AGENT_ID ? { callerAgentId: process.env.PU_AGENT_ID } : {}),
      }),
    );
    for (const warning of result.warnings) this.report.note(`pu: warning: ${warning}`);
    return this.report.result(result, (out) => {
      out.line(`queued ${result.ticket.id} (${result.ticket.priority}) ${result.ticket.title}`);
      out.line(`  file: ${result.ticket.path}`);
      if (result.outputOf) out.line(`  output ticket of ${result.outputOf}`);
    });
  }
}
