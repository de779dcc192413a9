import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanApproveCommand extends PuCommand {
  static override paths = [["plan", "approve"]];
  static override usage = Command.Usage({
    description: "Approve a session's plan so its workers start (sets plan.approved_at)",
    examples: [["Approve after reading the design", "$0 plan approve 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request("plan_approve", { projectRoot, sessionId: this.sessionId }));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
