import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanShowCommand extends PuCommand {
  static override paths = [["plan", "show"]];
  static override usage = Command.Usage({
    description: "Print a plan session's design and its task graph (what `pu plan approve` approves)",
    examples: [["Read the plan before approving it", "$0 plan show 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request("plan_status", { projectRoot, sessionId: this.sessionId }));
    // The daemon reads design.md with the status (the page shows it the same way).
    return this.report.result(plan, (out) => {
      out.write(plan.design ?? "(no design.md yet: the planner has not written it)\n");
      out.line();
      writePlanSummary(out, plan);
    });
  }
}
