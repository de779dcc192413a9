import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { CliUsageError } from "../../usage-error.js";

export default class PlanMergeCommand extends PuCommand {
  static override paths = [["plan", "merge"]];
  static override usage = Command.Usage({
    description: "Merge a COMPLETE plan's integration branch (pu/plan-ID) into the branch the plan started from",
    details: `
      The same merge as \`pu merge\`: a merge commit by default, \`--squash\` or \`--ff-only\` on
      request; uncommitted changes in the base's checkout are refused, and a conflict aborts
      cleanly (exit 1, the files named) leaving both branches as they were. \`--into\` merges into
      another branch. Only a COMPLETE session is merged; the merge is recorded in its evidence log.
    `,
    examples: [
      ["Merge a verified plan", "$0 plan merge 20261123-ab12cd"],
      ["Squash it into one commit", '$0 plan merge 20261123-ab12cd --squash -m "Rate limiting"'],
      ["Into another branch", "$0 plan merge 20261123-ab12cd --into release"],
    ],
  });

  sessionId = Option.String({ name: "ID" });
  squash = Option.Boolean("--squash", false, { description: "Squash into a single commit" });
  ffOnly = Option.Boolean("--ff-only", false, { description: "Refuse unless it fast-forwards" });
  message = Option.String("--message,-m", { description: "Commit message" });
  into = Option.String("--into", { description: "Branch to merge into (default: the branch the plan started from)" });

  async run(): Promise<number> {
    if (this.squash && this.ffOnly) throw new CliUsageError("--squash and --ff-only cannot be used together");
    const strategy = this.squash ? "squash" : this.ffOnly ? "ff-only" : "merge";
    const projectRoot = this.projectRoot();
    const fields = {
      projectRoot,
      sessionId: this.sessionId,
      strategy,
      ...(this.message === undefined ? {} : { message: this.message }),
      ...(this.into === undefined ? {} : { into: this.into }),
    } as const;
    const result = await withDaemon((client) => client.request("plan_merge", fields));
    return this.report.result(result, (out) => {
      if (result.nothingToMerge) {
        out.line(`nothing to merge: ${result.baseBranch} already holds ${result.branch}`);
        return;
      }
      out.line(`merged ${result.branch} into ${result.baseBranch} (${result.strategy})${result.commit ? ` at ${result.commit.slice(0, 12)}` : ""}`);
    });
  }
}
