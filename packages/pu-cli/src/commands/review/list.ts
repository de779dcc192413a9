import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { columnLines } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";

export default class ReviewListCommand extends PuCommand {
  static override paths = [["review", "list"]];
  static override usage = Command.Usage({
    description: "List tickets waiting for a person (reviews, timeouts, gates out of retries)",
    examples: [["What waits", "$0 review"]],
  });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("review_list", { projectRoot }));
    return this.report.result(result, (out) => {
      if (result.reviews.length === 0) return out.line("nothing waits for a review");
      const rows = result.reviews.map((r) => [r.ticketId, r.step ?? "-", r.reviewState ?? "-", r.agentId ?? "-", r.lastMessage ?? ""]);
      for (const line of columnLines(["TICKET", "STEP", "REVIEW", "AGENT", "NOTE"], rows)) out.line(line);
    });
  }
}
