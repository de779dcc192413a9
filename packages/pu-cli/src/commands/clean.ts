import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { writeJson, writeLine } from "../output.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class CleanCommand extends PuCommand {
  static override paths = [["clean"]];
  static override usage = Command.Usage({
    description: "Remove worktrees: kill their agents, remove the directory, delete the branch",
    examples: [
      ["Clean one worktree", "$0 clean --worktree wt-ab12cd34"],
      ["Clean every worktree", "$0 clean --all"],
    ],
  });

  worktree = Option.String("--worktree", { description: "Worktree id" });
  all = Option.Boolean("--all", false, { description: "Every worktree" });

  async run(): Promise<number> {
    if ((this.worktree === undefined) === !this.all) {
      throw new CliUsageError(this.all ? "--worktree and --all cannot be used together" : "say what to clean: --worktree WT or --all");
    }
    const projectRoot = this.projectRoot();
    const fields = {
      projectRoot,
      ...(this.all ? { all: true } : { worktreeId: this.worktree! }),
      ...(process.env.PU_AGENT_ID ? { callerAgentId: process.env.PU_AGENT_ID } : {}),
    };
    const result = await withDaemon((client) => client.request("clean", fields, { timeoutMs: 300_000 }));
    if (this.json) {
      writeJson(result);
      return 0;
    }
    if (result.cleaned.length === 0) writeLine("nothing to clean");
    for (const c of result.cleaned) {
      const done = [
        c.killedAgents.length > 0 ? `killed ${c.killedAgents.join(", ")}` : "",
        c.removedPath ? "removed directory" : "",
        c.deletedBranch ? "deleted branch" : "",
      ].filter(Boolean);
      writeLine(`cleaned ${c.worktreeId}${done.length ? `: ${done.join("; ")}` : ""}`);
      for (const note of c.notes) writeLine(`  ${note}`);
    }
    return 0;
  }
}
