import { Command } from "../../clipanion.js";
import { daemonHome } from "../../daemon-client.js";
import { startDaemon } from "../../daemon-control.js";
import { PuCommand } from "../../pu-command.js";

export default class DaemonStartCommand extends PuCommand {
  static override paths = [["daemon", "start"]];
  static override usage = Command.Usage({
    category: "Daemon",
    description: "Start the pu daemon in the background (other commands do this on demand)",
    examples: [["Start it", "$0 daemon start"]],
  });

  async run(): Promise<number> {
    const home = daemonHome();
    const outcome = await startDaemon(home);
    return this.report.result({ running: true, started: !outcome.alreadyRunning, pid: outcome.pid, home }, (out) =>
      out.line(outcome.alreadyRunning ? `pu daemon already running (pid ${outcome.pid})` : `pu daemon started (pid ${outcome.pid})`),
    );
  }
}
