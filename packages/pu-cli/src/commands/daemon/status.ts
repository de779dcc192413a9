import { Command } from "../../clipanion.js";
import { isPuError } from "@pu/core/errors";
import { daemonHome, readDaemonPid, tryConnectDaemon } from "../../daemon-client.js";
import { formatDuration } from "../../format.js";
import { PuCommand } from "../../pu-command.js";

export default class DaemonStatusCommand extends PuCommand {
  static override paths = [["daemon", "status"]];
  static override usage = Command.Usage({
    category: "Daemon",
    description: "Say whether the pu daemon is running, with its pid and uptime (never starts it)",
    details: "Exits 0 when a compatible daemon answers and 4 (daemon unavailable) when none runs or it speaks another protocol, so scripts can test it; `--json` prints the document either way. A `problem:` line names a state file of the daemon's it cannot use ($PU_HOME/projects.json), which it leaves as it is.",
    examples: [
      ["Check", "$0 daemon status"],
      ["In a script", "$0 daemon status >/dev/null || $0 daemon start"],
    ],
  });

  async run(): Promise<number> {
    const home = daemonHome();
    let client;
    try {
      client = await tryConnectDaemon(home);
    } catch (error) {
      if (!isPuError(error) || error.code !== "PROTOCOL_MISMATCH") throw error;
      const pid = readDaemonPid(home) ?? null;
      const answer = { running: true, compatible: false, pid, home, message: error.message };
      return this.report.result(answer, (out) => out.line(`pu daemon running (pid ${pid ?? "unknown"}) but incompatible: ${error.message}`), 4);
    }
    if (!client) {
      return this.report.result({ running: false, home }, (out) => out.line(`pu daemon not running (home ${home})`), 4);
    }
    try {
      const health = await client.request("health", {});
      return this.report.result({ running: true, compatible: true, ...health }, (out) => {
        out.line(`pu daemon running: pid ${health.pid}, up ${formatDuration(health.uptimeSeconds)}, version ${health.daemonVersion}, home ${health.home}`);
        // A state file the daemon cannot use (projects.json): it runs, but someone should know.
        for (const problem of health.problems ?? []) out.line(`problem: ${problem}`);
      });
    } finally {
      client.close();
    }
  }
}
