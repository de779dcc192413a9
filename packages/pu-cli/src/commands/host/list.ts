import { describeTransport } from "@pu/core/hosts-file";
import type { HostLinkView } from "@pu/ipc/protocol";
import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostListCommand extends PuCommand {
  static override paths = [["host", "list"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "List the hosts this daemon knows: name, transport, root, link state, agents, agent cap",
    details: "STATE is the control plane's link: `connected`, `unreachable since TIME (why)`, or `idle` (not needed since the daemon started). A host holding agents is asked first, within 5 s.",
    examples: [["Every host", "$0 host list"]],
  });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("host_list", {}));
    return this.report.result(result, (out) => {
      for (const problem of result.problems ?? []) out.line(`problem: ${problem}`);
      if (result.hosts.length === 0) {
        out.line("no hosts (add one with `pu host add NAME --ssh user@host --root /srv/pu`)");
        return;
      }
      const rows = [
        ["NAME", "TRANSPORT", "ROOT", "STATE", "AGENTS", "MAX AGENTS"],
        ...result.hosts.map((h) => [h.name, describeTransport(h.transport), h.root, linkState(h.link), String(h.link.agents), h.maxAgents === null ? "-" : String(h.maxAgents)]),
      ];
      const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
      for (const row of rows) out.line(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
    });
  }
}

function linkState(link: HostLinkView): string {
  if (link.state === "unreachable") return `unreachable since ${link.since ?? "?"}${link.reason ? ` (${link.reason.slice(0, 80)})` : ""}`;
  return link.state;
}
