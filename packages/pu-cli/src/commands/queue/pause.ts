import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class QueuePauseCommand extends PuCommand {
  static override paths = [["queue", "pause"]];
  static override usage = Command.Usage({
    description: "Pause the queue: the daemon starts nothing on its own (tickets, schedules) until resumed",
    details: "Agents already running go on. `pu spawn` still works and says that the queue is paused.",
    examples: [["Pause", "$0 queue pause"]],
  });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("queue_pause", {}));
    return this.report.result(result, (out) => out.line("queue paused: no automatic launches until `pu queue resume`"));
  }
}
