import { Command } from "../../clipanion.js";
import { GroupCommand } from "./group-command.js";

export default class GroupCancelCommand extends GroupCommand {
  static override paths = [["group", "cancel"]];
  static override usage = Command.Usage({
    description: "Stop a group's members and mark it cancelled (their worktrees are kept)",
    examples: [["Cancel a group", "$0 group cancel g-3fa9c1"]],
  });

  readonly request = "group_cancel";
}
