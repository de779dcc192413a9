import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanRunCommand extends PuCommand {
  static override paths = [["plan", "run"]];
  static override usage = Command.Usage({
    description: "Continue a --plan-only session (approving its plan if needed)",
    examples: [["Go on with a planned session", "$0 plan run 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request("plan_run", { projectRoot, sessionId: this.sessionId }));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
