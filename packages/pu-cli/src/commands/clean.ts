import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class CleanCommand extends PuCommand {
  static override paths = [["clean"]];
  static override usage = Command.Usage({
    description: "Remove worktrees: kill their agents, remove the directory, delete the branch",
    details: `
      A worktree with uncommitted files, or whose branch has commits its base branch lacks, is
      not removed: one worktree is refused (exit 1) naming the files and the number of commits,
      and \`--all\` cleans what is safe and lists what it kept. \`--force\` removes it anyway and
      says what was discarded. A squash-merged branch counts as merged.

      A worktree a running ticket, group or plan owns is left alone the same way (refused, or kept
      by \`--all\` naming its owner) until the owner is cancelled or \`--force\` is given.

      While pu cannot read which worktrees it placed on hosts (remote-projects.json), \`--all\`
      cleans this machine's, says in one line that the hosts' were not, and exits 1.
    `,
    examples: [
      ["Clean one worktree", "$0 clean --worktree wt-ab12cd34"],
      ["Clean every worktree whose work is merged or committed", "$0 clean --all"],
      ["Throw away a worktree's unmerged work", "$0 clean --worktree wt-ab12cd34 --force"],
    ],
  });

  worktree = Option.String("--worktree", { description: "Worktree id" });
  all = Option.Boolean("--all", false, { description: "Every worktree" });
  force = Option.Boolean("--force", false, { description: "Also discard uncommitted files and unmerged commits, and clean work a running ticket, group or plan owns" });

  async run(): Promise<number> {
    if ((this.worktree === undefined) === !this.all) {
      throw new CliUsageError(this.all ? "--worktree and --all cannot be used together" : "say what to clean: --worktree WT or --all");
    }
    const projectRoot = this.projectRoot();
    const fields = {
      projectRoot,
      ...(this.all ? { all: true } : { worktreeId: this.worktree! }),
      ...(this.force ? { force: true } : {}),
      ...(process.env.PU_AGENT_ID ? { callerAgentId: process.env.PU_AGENT_ID } : {}),
    };
    const result = await withDaemon((client) => client.request("clean", fields));
    const problems = result.problems ?? [];
    return this.report.result(
      result,
      (out) => {
        if (result.cleaned.length === 0 && result.kept.length === 0) out.line(problems.length > 0 ? "nothing to clean on this machine" : "nothing to clean");
        for (const c of result.cleaned) {
          const done = [
            c.killedAgents.length > 0 ? `killed ${c.killedAgents.join(", ")}` : "",
            c.removedPath ? "removed directory" : "",
            c.deletedBranch ? "deleted branch" : "",
          ].filter(Boolean);
          out.line(`cleaned ${c.worktreeId}${done.length ? `: ${done.join("; ")}` : ""}`);
          for (const note of c.notes) out.line(`  ${note}`);
        }
        for (const k of result.kept) {
          out.line(k.owner ? `kept ${k.worktreeId} (${k.name}): ${k.reason}` : `kept ${k.worktreeId} (${k.name}): ${k.reason}; pu clean --worktree ${k.worktreeId} --force discards it`);
        }
        // The JSON document carries them as `problems`.
        for (const problem of problems) this.report.note(`pu: ${problem}`);
      },
      // Worktrees on hosts were not looked at, and pu cannot say which: a failure (a worktree kept by the rules is not).
      problems.length > 0 ? 1 : 0,
    );
  }
}
