import { Command } from "../../clipanion.js";
import { PlanSessionCommand } from "./session-command.js";

export default class PlanRunCommand extends PlanSessionCommand {
  static override paths = [["plan", "run"]];
  static override usage = Command.Usage({
    description: "Continue a --plan-only session (approving its plan if needed)",
    examples: [["Go on with a planned session", "$0 plan run 20261123-ab12cd"]],
  });

  readonly request = "plan_run";
}
