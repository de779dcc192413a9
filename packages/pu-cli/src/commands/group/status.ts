import { Command } from "../../clipanion.js";
import { GroupCommand } from "./group-command.js";

export default class GroupStatusCommand extends GroupCommand {
  static override paths = [["group", "status"]];
  static override usage = Command.Usage({
    description: "Show a group's phase and each member's state",
    details: "Phases: launching (members wait for slots), running, aggregating, then complete, failed or cancelled. `--json` gives every field, outputs included.",
    examples: [["One group", "$0 group status g-3fa9c1"]],
  });

  readonly request = "group_status";
}
