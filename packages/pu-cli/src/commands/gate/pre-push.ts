import { Command } from "../../clipanion.js";
import { GateCommand } from "./run-gates.js";

export default class GatePrePushCommand extends GateCommand {
  static override paths = [["gate", "pre-push"]];
  static override usage = Command.Usage({
    description: "Run the pre_push gates (what pu's git hook runs before a push in one of its worktrees)",
    details: `
      Runs the gates of every trigger with \`on: pre_push\` (the project's and \$PU_HOME's) in the repository at
      \`--cwd\` (default: here). Exits 0 when all pass; otherwise 1, with each failing gate's command, exit code and
      the end of its output on stderr.
    `,
    examples: [
      ["Check before a push", "$0 gate pre-push"],
      ["For another checkout", "$0 gate pre-push --cwd .pu/worktrees/wt-ab12cd34"],
    ],
  });
  readonly event = "pre_push";
}
