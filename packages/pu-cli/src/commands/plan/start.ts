import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writePlanSummary } from "../../plan-view.js";
import { optional, positiveNumberOption, wholeNumberOption } from "../../number-options.js";
import { PuCommand } from "../../pu-command.js";

export default class PlanStartCommand extends PuCommand {
  static override paths = [["plan", "start"]];
  static override usage = Command.Usage({
    description: "Start a plan session: explorers, a design and task graph, workers, verification",
    details:
      "The daemon runs the roles (explorer, planner, worker, verifier) as agents of the types `plan.agents.<role>` in `.pu/config.yaml` names (default: the project's defaultAgent), validates what they write, and enforces the caps, the dependencies and the evidence. Without `--auto` the session waits for `pu plan approve` once the plan is made. See docs/plans.md.",
    examples: [
      ["Plan and wait for approval", '$0 plan start "add rate limiting to the API"'],
      ["Run everything, at most 2 workers at once", '$0 plan start "port the CLI to clipanion" --auto --max-workers 2'],
      ["Only make the plan", '$0 plan start "split the monolith" --plan-only'],
      ["At most $5 over all its agents", '$0 plan start "add rate limiting to the API" --auto --max-cost 5'],
      ["Workers spread over this machine and a host", '$0 plan start "add rate limiting to the API" --auto --on local,gpu-box'],
    ],
  });

  goal = Option.String({ name: "GOAL" });
  maxWorkers = Option.String("--max-workers", { description: "Workers at once (0: no plan limit; the queue's caps still apply)" });
  maxIterations = Option.String("--max-iterations", { description: "Verification rounds before the session fails (default 5)" });
  skipVerify = Option.Boolean("--skip-verify", false, { description: "Complete when every task is resolved, without a verifier" });
  planOnly = Option.Boolean("--plan-only", false, { description: "Stop once the plan is made; `pu plan run` continues" });
  auto = Option.Boolean("--auto", false, { description: "Approve the plan without asking" });
  maxCost = Option.String("--max-cost", { description: "The plan's budget in US dollars over all its agents: spent, running turns are interrupted, nothing more starts and the plan fails" });
  maxTokens = Option.String("--max-tokens", { description: "The plan's budget in tokens (input + cache + output) over all its agents" });
  on = Option.String("--on", { description: "Where workers run: local (this machine) and hosts, comma-separated; spread over those with room (explorers, planner and verifier run here)" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const fields = {
      projectRoot,
      goal: this.goal,
      skipVerify: this.skipVerify,
      planOnly: this.planOnly,
      auto: this.auto,
      ...optional("maxWorkers", wholeNumberOption("--max-workers", this.maxWorkers, 0)),
      ...optional("maxIterations", wholeNumberOption("--max-iterations", this.maxIterations, 1)),
      ...optional("maxCost", positiveNumberOption("--max-cost", this.maxCost)),
      ...optional("maxTokens", wholeNumberOption("--max-tokens", this.maxTokens, 1)),
      ...(this.on !== undefined ? { on: this.on.split(",").map((p) => p.trim()) } : {}),
    };
    const plan = await withDaemon((client) => client.request("plan_start", fields));
    return this.report.result(plan, (out) => writePlanSummary(out, plan));
  }
}
