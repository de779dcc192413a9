import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanCancelCommand extends PuCommand {
  static override paths = [["plan", "cancel"]];
  static override usage = Command.Usage({
    description: "Stop every agent of a plan session and mark it CANCELLED (its worktrees are kept)",
    examples: [["Cancel a session", "$0 plan cancel 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request("plan_cancel", { projectRoot, sessionId: this.sessionId }));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
