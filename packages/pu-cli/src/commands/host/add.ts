import { PuError } from "@pu/core/errors";
import { describeTransport } from "@pu/core/hosts-file";
import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { wholeNumberOption } from "../../number-options.js";
import { PuCommand } from "../../pu-command.js";

export default class HostAddCommand extends PuCommand {
  static override paths = [["host", "add"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "Add a host: another machine, container or pod with a pu daemon of its own, reached over ssh or an exec prefix",
    details: `
      With --ssh, pu runs the person's own OpenSSH (their ~/.ssh/config, keys, agent and
      ProxyJump apply; host keys are always verified, never accepted on first sight, and ssh
      never prompts). --ssh-config FILE adds \`ssh -F FILE\`, --ssh-option KEY=VALUE adds
      \`ssh -o\` (options that run commands of their own, or weaken host key checking, are refused).

      With --exec, the words given are the prefix a command runs behind, as argv with no shell:
      \`podman exec -i CTR\`, \`docker exec -i CTR\`, \`kubectl exec -i -n NS POD --\`.

      --root is where pu lives on the host: its home (ROOT/home), its install (ROOT/bin/pu,
      from \`pu host install\`) and project mirrors. Nothing is contacted here: \`pu host check\` does.
    `,
    examples: [
      ["A machine over ssh", "$0 host add gpu-box --ssh me@gpu-box.lan --root /srv/pu"],
      ["A container", '$0 host add sandbox --exec "podman exec -i pu-sandbox" --root /pu'],
    ],
  });

  name = Option.String({ name: "NAME" });
  ssh = Option.String("--ssh", { description: "[user@]host for OpenSSH" });
  sshConfig = Option.String("--ssh-config", { description: "An ssh config file (ssh -F)" });
  sshOptions = Option.Array("--ssh-option", [], { description: "KEY=VALUE for ssh -o (repeatable)" });
  exec = Option.String("--exec", { description: "The prefix a command runs behind, split on spaces (podman exec -i CTR)" });
  root = Option.String("--root", { description: "An absolute path on the host where pu keeps its home, install and mirrors", required: true });
  maxAgents = Option.String("--max-agents", { description: "At most this many agents on the host at once" });

  async run(): Promise<number> {
    if ((this.ssh === undefined) === (this.exec === undefined)) throw new PuError("INVALID_ARGUMENT", "give exactly one of --ssh [user@]host or --exec \"COMMAND PREFIX\"");
    if (this.exec !== undefined && (this.sshConfig !== undefined || this.sshOptions.length > 0)) throw new PuError("INVALID_ARGUMENT", "--ssh-config and --ssh-option go with --ssh");
    const maxAgents = wholeNumberOption("--max-agents", this.maxAgents, 1);
    const transport =
      this.ssh !== undefined
        ? { kind: "ssh" as const, destination: this.ssh, ...(this.sshConfig ? { configFile: this.sshConfig } : {}), options: this.sshOptions }
        : { kind: "exec" as const, command: (this.exec ?? "").split(/\s+/).filter(Boolean) };
    const result = await withDaemon((client) => client.request("host_add", { name: this.name, transport, root: this.root, ...(maxAgents ? { maxAgents } : {}) }));
    return this.report.result(result, (out) => out.line(`added host ${result.host.name} (${describeTransport(result.host.transport)}, root ${result.host.root}); check it with \`pu host check ${result.host.name}\``));
  }
}
