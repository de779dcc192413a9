import { Command } from "../../clipanion.js";
import { ScheduleSetEnabledCommand } from "./set-enabled.js";

export default class ScheduleDisableCommand extends ScheduleSetEnabledCommand {
  static override paths = [["schedule", "disable"]];
  static override usage = Command.Usage({
    description: "Turn a schedule off (the file stays; `pu schedule enable` turns it back on)",
    details: "Changes `enabled` in the project's `.pu/schedules/NAME.yaml`, keeping its other keys and comments.",
    examples: [["Disable a schedule", "$0 schedule disable nightly"]],
  });

  readonly enabled = false;
}
