import { Command } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanListCommand extends PuCommand {
  static override paths = [["plan", "list"]];
  static override usage = Command.Usage({
    description: "List the project's plan sessions, oldest first (a session whose files pu cannot read is listed as UNREADABLE with the file and why)",
    examples: [["Every session and its phase", "$0 plan list"]],
  });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("plan_list", { projectRoot }));
    return this.report.result(result, (out) => {
      if (result.plans.length === 0 && result.unreadable.length === 0) out.line("no plan sessions (start one with `pu plan start GOAL`)");
      for (const plan of result.plans) {
        const resolved = plan.tasks.filter((t) => t.status === "resolved").length;
        out.line(`${plan.sessionId}  ${plan.phase.padEnd(12)} ${resolved}/${plan.tasks.length} tasks  ${plan.goal.split("\n")[0]?.slice(0, 60) ?? ""}`);
      }
      // Never left out: a session pu cannot read is listed with its file and what is wrong.
      for (const bad of result.unreadable) out.line(`${bad.sessionId}  ${"UNREADABLE".padEnd(12)} ${bad.file}: ${bad.reason}`);
    });
  }
}
