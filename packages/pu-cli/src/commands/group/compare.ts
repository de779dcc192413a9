import { Command } from "../../clipanion.js";
import { GroupCommand } from "./group-command.js";

export default class GroupCompareCommand extends GroupCommand {
  static override paths = [["group", "compare"]];
  static override usage = Command.Usage({
    description: "Compare a group's members side by side: state, time, change size, gate, judge rank",
    details: "One row per member: variant (the winner marked *), agent, model, state, time, files changed, lines added and removed, gate result (attempts), and the judge's rank. Each member's output is in `--json` (`members[].output`).",
    examples: [["Compare the members", "$0 group compare g-3fa9c1"]],
  });

  readonly request = "group_status";
  override readonly table = true;
}
