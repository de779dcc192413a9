import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostRemoveCommand extends PuCommand {
  static override paths = [["host", "remove"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "Forget a host (nothing on the host is touched)",
    details: "Refused while pu holds agents or worktrees there (merge or clean them first); `--force` forgets them here and leaves them running on the host.",
    examples: [
      ["Forget gpu-box", "$0 host remove gpu-box"],
      ["Forget it though agents run there", "$0 host remove gpu-box --force"],
    ],
  });

  name = Option.String({ name: "NAME" });
  force = Option.Boolean("--force", false, { description: "Remove it though pu holds agents or worktrees there" });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("host_remove", this.force ? { name: this.name, force: true } : { name: this.name }));
    return this.report.result(result, (out) => out.line(`removed host ${result.host.name} (its daemon, files and agents on the host are left as they are)`));
  }
}
