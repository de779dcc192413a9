import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";

export default class GroupDiffCommand extends PuCommand {
  static override paths = [["group", "diff"]];
  static override usage = Command.Usage({
    description: "Show what one member of a group changed against the group's base",
    examples: [
      ["The full diff of member codex", "$0 group diff g-3fa9c1 codex"],
      ["Files and line counts of prompt variant 1", "$0 group diff g-3fa9c1 1 --stat"],
    ],
  });

  groupId = Option.String({ name: "ID" });
  variant = Option.String({ name: "VARIANT" });
  stat = Option.Boolean("--stat", false, { description: "Files and line counts only" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const diff = await withDaemon((client) => client.request("group_diff", { projectRoot, groupId: this.groupId, variant: this.variant, stat: this.stat }));
    return this.report.result(diff, (out) => {
      out.line(`${this.groupId} ${diff.variant}: ${diff.branch} vs ${diff.baseBranch}: ${diff.files.length} file(s), +${diff.insertions} -${diff.deletions}`);
      if (this.stat || diff.patch === undefined) {
        for (const f of diff.files) out.line(`  ${f.path}  ${f.binary ? "binary" : `+${f.insertions} -${f.deletions}`}`);
      } else if (diff.patch !== "") {
        out.write(diff.patch.endsWith("\n") ? diff.patch : `${diff.patch}\n`);
      }
    });
  }
}
