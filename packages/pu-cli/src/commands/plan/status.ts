import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanStatusCommand extends PuCommand {
  static override paths = [["plan", "status"]];
  static override usage = Command.Usage({
    description: "Show a plan session: phase, stage, iteration and the task graph with each task's state and worker",
    examples: [["Where a session is", "$0 plan status 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request("plan_status", { projectRoot, sessionId: this.sessionId }));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
