import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class QueueResumeCommand extends PuCommand {
  static override paths = [["queue", "resume"]];
  static override usage = Command.Usage({
    description: "Resume the queue: waiting tickets are dispatched again",
    examples: [["Resume", "$0 queue resume"]],
  });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("queue_resume", {}));
    return this.report.result(result, (out) => out.line("queue resumed"));
  }
}
