import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostCheckCommand extends PuCommand {
  static override paths = [["host", "check"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "Reach a host through its transport: node, git, pu, cores, free disk, and whether its pu daemon answers pu's handshake",
    details: "Exits 0 when the host can run agents, 1 when it is reachable but lacks something (listed, each with what to do), 4 when it cannot be reached.",
    examples: [["Check gpu-box", "$0 host check gpu-box"]],
  });

  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const check = await withDaemon((client) => client.request("host_check", { name: this.name }));
    const exitCode = !check.reachable ? 4 : check.ready ? 0 : 1;
    return this.report.result(
      check,
      (out) => {
        if (!check.reachable) {
          out.line(`${check.name}: unreachable through ${check.transport} (${check.reason ?? "no answer"})`);
          return;
        }
        out.line(`${check.name}: reachable through ${check.transport} in ${check.seconds.toFixed(1)} s`);
        out.line(`  node   ${check.node ?? "missing"}`);
        out.line(`  git    ${check.git ?? "missing"}`);
        out.line(`  pu     ${check.pu ? `${check.pu} (${check.puPath})` : "missing"}`);
        out.line(`  daemon ${check.daemon ? `pid ${check.daemon.pid}, pu ${check.daemon.daemonVersion}, protocol ${check.daemon.protocolVersion}` : (check.reason ?? "not started (no pu)")}`);
        out.line(`  cores  ${check.cores ?? "?"}, free disk under ${check.root}: ${check.freeDiskBytes === null ? "?" : `${(check.freeDiskBytes / 2 ** 30).toFixed(1)} GiB`}`);
        for (const what of check.missing) out.line(`  missing: ${what}`);
      },
      exitCode,
    );
  }
}
