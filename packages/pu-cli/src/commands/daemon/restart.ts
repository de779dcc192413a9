import { Command } from "../../clipanion.js";
import { daemonHome } from "../../daemon-client.js";
import { startDaemon, stopDaemon } from "../../daemon-control.js";
import { PuCommand } from "../../pu-command.js";

export default class DaemonRestartCommand extends PuCommand {
  static override paths = [["daemon", "restart"]];
  static override usage = Command.Usage({
    category: "Daemon",
    description: "Stop the pu daemon (if running) and start it again, e.g. after upgrading pu",
    details: `
      The new daemon starts with this shell's environment, which its agents then get.
      Stopping benches every running agent (as \`pu daemon stop\` does): \`pu play ID\`
      brings each one back — a terminal agent as a fresh shell, Claude, Codex and OpenCode
      with their conversation.
    `,
    examples: [["Restart it", "$0 daemon restart"]],
  });

  async run(): Promise<number> {
    const home = daemonHome();
    const stopped = await stopDaemon(home);
    const started = await startDaemon(home);
    return this.report.result({ stoppedPid: stopped.pid ?? null, pid: started.pid }, (out) =>
      out.line(`pu daemon ${stopped.wasRunning ? "restarted" : "started"} (pid ${started.pid})`),
    );
  }
}
