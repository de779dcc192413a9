import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { writeJson, writeLine, writeNote } from "../output.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class MergeCommand extends PuCommand {
  static override paths = [["merge"]];
  static override usage = Command.Usage({
    description: "Merge a worktree's branch into its base branch",
    details: "A conflict aborts cleanly: the worktree is marked failed with the conflicting files, and both branches stay as they were.",
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
    const result = await withDaemon((client) => client.request("merge", fields, { timeoutMs: 300_000 }));
    const failed = result.status === "failed" || (result.conflicts?.length ?? 0) > 0;
    if (this.json) {
      writeJson(result);
      return failed ? 1 : 0;
    }
    if (failed) {
      writeNote(`pu: merge of ${result.worktreeId} into ${result.baseBranch} failed; conflicts: ${(result.conflicts ?? []).join(", ") || "none reported"}`);
      return 1;
    }
    writeLine(`merged ${result.worktreeId} into ${result.baseBranch} (${result.strategy})${result.commit ? ` at ${result.commit.slice(0, 12)}` : ""}`);
    return 0;
  }
}
