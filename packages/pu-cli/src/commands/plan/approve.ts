import { Command } from "../../clipanion.js";
import { PlanSessionCommand } from "./session-command.js";

export default class PlanApproveCommand extends PlanSessionCommand {
  static override paths = [["plan", "approve"]];
  static override usage = Command.Usage({
    description: "Approve a session's plan so its workers start (sets plan.approved_at); a --plan-only session's workers start with `pu plan run`",
    examples: [["Approve after reading the design", "$0 plan approve 20261123-ab12cd"]],
  });

  readonly request = "plan_approve";
}
