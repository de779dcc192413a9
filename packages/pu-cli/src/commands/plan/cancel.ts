import { Command } from "../../clipanion.js";
import { PlanSessionCommand } from "./session-command.js";

export default class PlanCancelCommand extends PlanSessionCommand {
  static override paths = [["plan", "cancel"]];
  static override usage = Command.Usage({
    description: "Stop every agent of a plan session and mark it CANCELLED (its worktrees are kept)",
    examples: [["Cancel a session", "$0 plan cancel 20261123-ab12cd"]],
  });

  readonly request = "plan_cancel";
}
