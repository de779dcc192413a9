import { Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { PuCommand } from "../../pu-command.js";

/** `pu plan status|approve|run|cancel ID`: one request about one session, answered with its summary. */
export abstract class PlanSessionCommand extends PuCommand {
  abstract readonly request: "plan_status" | "plan_approve" | "plan_run" | "plan_cancel";

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const plan = await withDaemon((client) => client.request(this.request, { projectRoot, sessionId: this.sessionId }));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
