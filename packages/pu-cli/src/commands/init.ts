import { Command } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { resolveInitRoot } from "../project.js";
import { PuCommand } from "../pu-command.js";

export default class InitCommand extends PuCommand {
  static override paths = [["init"]];
  static override usage = Command.Usage({
    description: "Make the current git repository a pu project",
    details: "Creates `.pu/` (manifest, config) at the git top level of the current directory, or at `--project DIR`. Running it again is harmless.",
    examples: [
      ["Initialize the repository you are in", "$0 init"],
      ["Initialize another repository", "$0 init --project ~/src/app"],
    ],
  });

  async run(): Promise<number> {
    const projectRoot = await resolveInitRoot({ flag: this.project });
    const result = await withDaemon((client) => client.request("init", { projectRoot }));
    return this.report.result(result, (out) =>
      out.line(result.created ? `initialized pu project in ${result.projectRoot}` : `${result.projectRoot} is already a pu project`),
    );
  }
}
