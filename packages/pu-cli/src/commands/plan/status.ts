import { Command } from "../../clipanion.js";
import { PlanSessionCommand } from "./session-command.js";

export default class PlanStatusCommand extends PlanSessionCommand {
  static override paths = [["plan", "status"]];
  static override usage = Command.Usage({
    description: "Show a plan session: phase, stage, iteration and the task graph with each task's state and worker",
    examples: [["Where a session is", "$0 plan status 20261123-ab12cd"]],
  });

  readonly request = "plan_status";
}
