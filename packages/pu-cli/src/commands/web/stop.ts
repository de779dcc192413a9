import { Command } from "../../clipanion.js";
import { daemonHome } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { stopWebServer } from "../../web-control.js";

export default class WebStopCommand extends PuCommand {
  static override paths = [["web", "stop"]];
  static override usage = Command.Usage({
    category: "Web",
    description: "Stop pu's web server (agents keep running; open pages lose their session)",
    examples: [["Stop it", "$0 web stop"]],
  });

  async run(): Promise<number> {
    const outcome = await stopWebServer(daemonHome());
    return this.report.result({ stopped: outcome.wasRunning, pid: outcome.pid ?? null }, (out) =>
      out.line(outcome.wasRunning ? `pu web stopped (pid ${outcome.pid})` : "pu web is not running"),
    );
  }
}
