import path from "node:path";
import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostInstallCommand extends PuCommand {
  static override paths = [["host", "install"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "Install this pu on a host: its packed tarballs over the transport, npm under the host's root, then check",
    details: `
      Make the tarballs first with \`bash scripts/pack.sh DIR\` (docs/install.md). pu copies them
      to ROOT/packages on the host through the host's own transport, runs the host's npm
      (\`npm install -g --prefix ROOT/prefix\`; node-pty compiles there, so the host needs a C++
      toolchain), links ROOT/bin/pu and runs \`pu host check\`. A host daemon already running an
      older pu keeps running it until \`pu daemon restart\` on the host.
    `,
    examples: [["Install on gpu-box", "$0 host install gpu-box --packed ./packed"]],
  });

  name = Option.String({ name: "NAME" });
  packed = Option.String("--packed", { description: "The directory scripts/pack.sh wrote the tarballs to", required: true });

  async run(): Promise<number> {
    const packedDir = path.resolve(this.packed);
    const result = await withDaemon((client) => client.request("host_install", { name: this.name, packedDir }));
    const ready = result.check.ready;
    return this.report.result(
      result,
      (out) => {
        out.line(`installed ${result.installed.length} packages on ${this.name} (${result.check.pu ?? "pu ?"} at ${result.check.puPath ?? "?"})`);
        out.line(ready ? `${this.name}: ready (daemon pid ${result.check.daemon?.pid})` : `${this.name}: not ready: ${[...result.check.missing, result.check.reason].filter(Boolean).join("; ")}`);
      },
      ready ? 0 : 1,
    );
  }
}
