import { Command, Option } from "../clipanion.js";
import { budgetTokens, formatCost, formatTokens } from "@pu/core/usage";
import { withDaemon } from "../daemon-client.js";
import { positiveNumberOption, wholeNumberOption } from "../number-options.js";
import { PuCommand } from "../pu-command.js";

export default class BudgetCommand extends PuCommand {
  static override paths = [["budget"]];
  static override usage = Command.Usage({
    description: "Set an agent's budget; raising it past what the agent spent lets it take prompts again",
    details: `
      Once an agent's tokens (input, cache read and write, output, as the provider reported them) or
      their cost reach its budget, pu interrupts its turn with the CLI's own interrupt key, keeps the
      agent and its worktree, shows \`budget\` in its status, and refuses \`pu send\` until the budget
      is raised here.
    `,
    examples: [
      ["Allow $5 in all", "$0 budget ag-ab12cd34 --max-cost 5"],
      ["Allow 2 million tokens", "$0 budget ag-ab12cd34 --max-tokens 2000000"],
    ],
  });

  agentId = Option.String({ name: "AGENT" });
  maxTokens = Option.String("--max-tokens", { description: "Tokens in all (input, cache read and write, output)" });
  maxCost = Option.String("--max-cost", { description: "US dollars in all" });

  async run(): Promise<number> {
    const maxTokens = wholeNumberOption("--max-tokens", this.maxTokens, 1);
    const maxCost = positiveNumberOption("--max-cost", this.maxCost);
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) =>
      client.request("budget", { projectRoot, agentId: this.agentId, ...(maxTokens !== undefined ? { maxTokens } : {}), ...(maxCost !== undefined ? { maxCost } : {}) }),
    );
    return this.report.result(result, (out) => {
      const limits = [result.budget?.maxTokens !== undefined ? `${formatTokens(result.budget.maxTokens)} tokens` : "", result.budget?.maxCost !== undefined ? formatCost(result.budget.maxCost) : ""].filter(Boolean).join(" / ");
      const spent = result.usage ? `${formatTokens(budgetTokens(result.usage))} tokens, ${formatCost(result.usage.costUsd)}` : "unknown so far";
      out.line(`${result.agentId}: budget ${limits}; spent ${spent}${result.budget?.exceededAt ? " — still over it" : ""}`);
    });
  }
}
