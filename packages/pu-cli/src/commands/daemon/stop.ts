import { Command } from "../../clipanion.js";
import { daemonHome } from "../../daemon-client.js";
import { stopDaemon } from "../../daemon-control.js";
import { PuCommand } from "../../pu-command.js";

export default class DaemonStopCommand extends PuCommand {
  static override paths = [["daemon", "stop"]];
  static override usage = Command.Usage({
    category: "Daemon",
    description: "Stop the pu daemon and every agent it runs",
    details: "Agents are recorded in the manifest; resumable ones can be brought back with `pu play` after the daemon restarts. Anyone attached, following logs or watching status is told so, and their command exits 4.",
    examples: [["Stop it", "$0 daemon stop"]],
  });

  async run(): Promise<number> {
    const outcome = await stopDaemon(daemonHome());
    return this.report.result({ stopped: outcome.wasRunning, pid: outcome.pid ?? null }, (out) =>
      out.line(outcome.wasRunning ? `pu daemon stopped (pid ${outcome.pid})` : "pu daemon is not running"),
    );
  }
}
