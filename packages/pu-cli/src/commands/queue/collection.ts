import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class QueueCollectionCommand extends PuCommand {
  static override paths = [["queue", "collection"]];
  static override usage = Command.Usage({
    description: "Show or set the workflow collection this project's tickets use",
    details: "A collection NAME is read from `.pu/workflows/NAME/` and `$PU_HOME/workflows/NAME/`; `default` is the one pu ships (FEAT, FIX, TASK, SPIKE). `.pu/workflows/TYPE.yaml` always wins.",
    examples: [
      ["Show", "$0 queue collection"],
      ["Use another collection", "$0 queue collection strict"],
    ],
  });

  name = Option.String({ name: "NAME", required: false });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("queue_collection", { projectRoot, ...(this.name !== undefined ? { name: this.name } : {}) }));
    return this.report.result(result, (out) => out.line(`collection: ${result.collection}`));
  }
}
