import { Command } from "../../clipanion.js";
import { ScheduleSetEnabledCommand } from "./set-enabled.js";

export default class ScheduleEnableCommand extends ScheduleSetEnabledCommand {
  static override paths = [["schedule", "enable"]];
  static override usage = Command.Usage({
    description: "Turn a schedule on (it counts from now: runs missed while it was off are not made up)",
    details: "Changes `enabled` in the project's `.pu/schedules/NAME.yaml`, keeping its other keys and comments.",
    examples: [["Enable a schedule", "$0 schedule enable nightly"]],
  });

  readonly enabled = true;
}
