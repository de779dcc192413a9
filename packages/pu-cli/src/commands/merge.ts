import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class MergeCommand extends PuCommand {
  static override paths = [["merge"]];
  static override usage = Command.Usage({
    description: "Merge a worktree's branch into its base branch",
    details:
      "A conflict aborts cleanly: the worktree is marked failed with the conflicting files (exit 1; `--json` lists them all in `error.details.conflicts`), and both branches stay as they were. A branch with no commit its base lacks says \"nothing to merge\" (exit 0) and stays active.",
    examples: [
      ["Merge with a merge commit", "$0 merge wt-ab12cd34"],
      ["Squash into one commit", '$0 merge wt-ab12cd34 --squash --message "Fix login"'],
      ["Only if it fast-forwards", "$0 merge wt-ab12cd34 --ff-only"],
    ],
  });

  worktreeId = Option.String({ name: "WT" });
  squash = Option.Boolean("--squash", false, { description: "Squash into a single commit" });
  ffOnly = Option.Boolean("--ff-only", false, { description: "Refuse unless it fast-forwards" });
  message = Option.String("--message,-m", { description: "Commit message" });

  async run(): Promise<number> {
    if (this.squash && this.ffOnly) throw new CliUsageError("--squash and --ff-only cannot be used together");
    const strategy = this.squash ? "squash" : this.ffOnly ? "ff-only" : "merge";
    const projectRoot = this.projectRoot();
    const fields = { projectRoot, worktreeId: this.worktreeId, strategy, ...(this.message === undefined ? {} : { message: this.message }) } as const;
    const result = await withDaemon((client) => client.request("merge", fields));
    // A conflict is an error reply (MERGE_CONFLICT, its files in `details.conflicts`), reported like any other.
    return this.report.result(result, (out) => {
      if (result.nothingToMerge) {
        out.line(`nothing to merge: ${result.worktreeId}'s branch has no commit ${result.baseBranch} lacks (it stays ${result.status})`);
        return;
      }
      out.line(`merged ${result.worktreeId} into ${result.baseBranch} (${result.strategy})${result.commit ? ` at ${result.commit.slice(0, 12)}` : ""}`);
    });
  }
}
