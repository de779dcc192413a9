import { describeTransport } from "@pu/core/hosts-file";
import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostListCommand extends PuCommand {
  static override paths = [["host", "list"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "List the hosts this daemon knows: name, transport, root, agent cap",
    examples: [["Every host", "$0 host list"]],
  });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("host_list", {}));
    return this.report.result(result, (out) => {
      if (result.hosts.length === 0) {
        out.line("no hosts (add one with `pu host add NAME --ssh user@host --root /srv/pu`)");
        return;
      }
      const rows = [["NAME", "TRANSPORT", "ROOT", "MAX AGENTS"], ...result.hosts.map((h) => [h.name, describeTransport(h.transport), h.root, h.maxAgents === null ? "-" : String(h.maxAgents)])];
      const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
      for (const row of rows) out.line(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
    });
  }
}
