import { Command } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { formatDuration } from "../format.js";
import { PuCommand } from "../pu-command.js";

export default class HealthCommand extends PuCommand {
  static override paths = [["health"]];
  static override usage = Command.Usage({
    description: "Check that the pu daemon answers (starting it if needed)",
    examples: [["Show daemon pid, uptime and agent counts", "$0 health"]],
  });

  async run(): Promise<number> {
    const health = await withDaemon((client) => client.request("health", {}));
    return this.report.result(health, (out) => {
      out.line(`pu daemon ok: pid ${health.pid}, up ${formatDuration(health.uptimeSeconds)}, version ${health.daemonVersion} (protocol ${health.protocolVersion})`);
      out.line(`home ${health.home}; ${health.liveAgentCount} live of ${health.agentCount} agents in ${health.projects.length} project(s)`);
    });
  }
}
