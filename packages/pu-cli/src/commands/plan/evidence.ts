import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanEvidenceCommand extends PuCommand {
  static override paths = [["plan", "evidence"]];
  static override usage = Command.Usage({
    description: "Print a plan session's evidence log: checks pu ran, task transitions, verdicts",
    examples: [["What was proven, and how", "$0 plan evidence 20261123-ab12cd"]],
  });

  sessionId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("plan_evidence", { projectRoot, sessionId: this.sessionId }));
    return this.report.result(result, (out) => {
      for (const entry of result.evidenceLog) {
        const task = entry.task_id ? ` ${entry.task_id}` : "";
        out.line(`${entry.timestamp}  ${entry.type}${task}  ${entry.status ?? ""}  ${entry.summary ?? ""}`.trimEnd());
      }
    });
  }
}
