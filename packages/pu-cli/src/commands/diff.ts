import { Command, Option } from "../clipanion.js";
import type { WorktreeDiff } from "@pu/ipc/protocol";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import type { HumanOutput } from "../report.js";

function statLines(diff: WorktreeDiff): string[] {
  const header = `${diff.worktreeId} ${diff.name} (${diff.branch} vs ${diff.baseBranch}): ${diff.files.length} file(s), +${diff.insertions} -${diff.deletions}`;
  const width = Math.max(0, ...diff.files.map((f) => f.path.length));
  return [header, ...diff.files.map((f) => `  ${f.path.padEnd(width)}  ${f.binary ? "binary" : `+${f.insertions} -${f.deletions}`}`)];
}

export default class DiffCommand extends PuCommand {
  static override paths = [["diff"]];
  static override usage = Command.Usage({
    description: "Show what worktrees changed relative to their base branch",
    details:
      "Every active worktree's diff comes under a header naming it. A worktree that cannot be diffed (its directory or branch is gone) is flagged in its place and the others are still shown; the command then exits 1. So does a diff of every worktree while pu cannot read which ones it placed on hosts (remote-projects.json): this machine's are shown, and one line says the hosts' were not.",
    examples: [
      ["Diff every active worktree", "$0 diff"],
      ["Summary of one worktree", "$0 diff --worktree wt-ab12cd34 --stat"],
    ],
  });

  worktree = Option.String("--worktree", { description: "Only this worktree" });
  stat = Option.Boolean("--stat", false, { description: "Files and line counts only" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const fields = { projectRoot, stat: this.stat, ...(this.worktree === undefined ? {} : { worktreeId: this.worktree }) };
    const result = await withDaemon((client) => client.request("diff", fields));
    const broken = result.worktrees.filter((d) => d.error !== undefined);
    const problems = result.problems ?? [];
    const human = (out: HumanOutput) => {
      if (result.worktrees.length === 0) out.line(problems.length > 0 ? "no worktrees to diff on this machine" : "no worktrees to diff");
      for (const diff of result.worktrees) {
        if (diff.error !== undefined) {
          out.line(`${diff.worktreeId} ${diff.name}: cannot diff: ${diff.error}`);
        } else if (this.stat || diff.patch === undefined) {
          out.line(statLines(diff).join("\n"));
        } else {
          if (this.worktree === undefined) out.line(`== ${diff.worktreeId} ${diff.name} (${diff.branch} vs ${diff.baseBranch}) ==`);
          out.write(diff.patch.endsWith("\n") || diff.patch === "" ? diff.patch : diff.patch + "\n");
        }
      }
      // The JSON document carries each worktree's error itself.
      for (const d of broken) this.report.note(`pu: ${d.worktreeId} (${d.name}) could not be diffed: ${d.error}`);
      for (const problem of problems) this.report.note(`pu: ${problem}`);
    };
    return this.report.result(result, human, broken.length > 0 || problems.length > 0 ? 1 : 0);
  }
}
