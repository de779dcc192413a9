import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { checkedName, NOUNS } from "../../definition-commands.js";
import { writeJson, writeLine } from "../../output.js";
import { PuCommand } from "../../pu-command.js";

export default class ScheduleEnableCommand extends PuCommand {
  static override paths = [["schedule", "enable"]];
  static override usage = Command.Usage({
    description: "Turn a schedule on (it counts from now: runs missed while it was off are not made up)",
    details: "Changes `enabled` in the project's `.pu/schedules/NAME.yaml`, keeping its other keys and comments.",
    examples: [["Enable a schedule", "$0 schedule enable nightly"]],
  });

  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const name = checkedName(NOUNS.schedule, this.name);
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("schedule_enable", { projectRoot, name, enabled: true }));
    if (this.json) {
      writeJson(result);
      return 0;
    }
    writeLine(`schedule ${result.name} enabled${result.nextRun ? `; next run ${result.nextRun}` : ""}`);
    return 0;
  }
}
