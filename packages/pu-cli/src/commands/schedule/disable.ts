import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { checkedName, NOUNS } from "../../definition-commands.js";
import { writeJson, writeLine } from "../../output.js";
import { PuCommand } from "../../pu-command.js";

export default class ScheduleDisableCommand extends PuCommand {
  static override paths = [["schedule", "disable"]];
  static override usage = Command.Usage({
    description: "Turn a schedule off (the file stays; `pu schedule enable` turns it back on)",
    details: "Changes `enabled` in the project's `.pu/schedules/NAME.yaml`, keeping its other keys and comments.",
    examples: [["Disable a schedule", "$0 schedule disable nightly"]],
  });

  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const name = checkedName(NOUNS.schedule, this.name);
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("schedule_enable", { projectRoot, name, enabled: false }));
    if (this.json) {
      writeJson(result);
      return 0;
    }
    writeLine(`schedule ${result.name} disabled${result.nextRun ? `; next run ${result.nextRun}` : ""}`);
    return 0;
  }
}
