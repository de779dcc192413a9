import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class HostRemoveCommand extends PuCommand {
  static override paths = [["host", "remove"]];
  static override usage = Command.Usage({
    category: "Hosts",
    description: "Forget a host (nothing on the host is touched)",
    examples: [["Forget gpu-box", "$0 host remove gpu-box"]],
  });

  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const result = await withDaemon((client) => client.request("host_remove", { name: this.name }));
    return this.report.result(result, (out) => out.line(`removed host ${result.host.name} (its daemon, files and agents on the host are left as they are)`));
  }
}
