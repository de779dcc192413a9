import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { CliUsageError } from "../../usage-error.js";

const STRATEGIES = ["merge", "squash", "ff-only"] as const;

export default class GroupPickCommand extends PuCommand {
  static override paths = [["group", "pick"]];
  static override usage = Command.Usage({
    description: "Merge one member's work (default: the winner) and clean the other members' worktrees",
    details:
      "The member's worktree is merged into the group's base branch through the same path as `pu merge`. The other members' worktrees (and the judge's) are then removed, their work discarded: that is the choice being made. `--keep` keeps them.",
    examples: [
      ["Merge the winner, clean the rest", "$0 group pick g-3fa9c1"],
      ["Merge prompt variant 2, keep the others", "$0 group pick g-3fa9c1 2 --keep"],
    ],
  });

  groupId = Option.String({ name: "ID" });
  variant = Option.String({ name: "VARIANT", required: false });
  keep = Option.Boolean("--keep", false, { description: "Keep the other members' worktrees" });
  squash = Option.Boolean("--squash", false, { description: "One squashed commit instead of a merge commit" });
  strategy = Option.String("--strategy", { description: "merge (default), squash or ff-only" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const strategy = this.squash ? "squash" : (this.strategy ?? "merge");
    if (!(STRATEGIES as readonly string[]).includes(strategy)) throw new CliUsageError(`--strategy expects merge, squash or ff-only, got "${strategy}"`);
    const result = await withDaemon((client) =>
      client.request("group_pick", {
        projectRoot,
        groupId: this.groupId,
        strategy: strategy as (typeof STRATEGIES)[number],
        keep: this.keep,
        ...(this.variant !== undefined ? { variant: this.variant } : {}),
      }),
    );
    return this.report.result(result, (out) => {
      const merged = result.merge.nothingToMerge ? "had nothing to merge" : `merged into ${result.merge.baseBranch} (${(result.merge.commit ?? "").slice(0, 12)})`;
      out.line(`${result.groupId}: picked ${result.variant}, ${merged}`);
      for (const c of result.clean?.cleaned ?? []) out.line(`  cleaned ${c.worktreeId}${c.discarded ? " (its work discarded)" : ""}`);
      for (const k of result.clean?.kept ?? []) out.line(`  kept ${k.worktreeId}: ${k.reason}`);
    });
  }
}
