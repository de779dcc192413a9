import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";

export default class TrustCommand extends PuCommand {
  static override paths = [["trust"]];
  static override usage = Command.Usage({
    description: "Allow this project's .pu/ files to run the commands they name",
    details: `
      A project's \`.pu/\` can name commands: custom agent types in \`config.yaml\`, trigger
      gates, agent definitions and templates with a \`command\`. A cloned repository could carry
      any of them, so none runs until you trust it here. \`pu trust\` lists each one with what
      it runs and records it as trusted, in \`$PU_HOME/trust.json\`; a later change to what an
      item runs asks again. What you save through pu (\`pu trigger create\`…) is trusted as
      written. \`--show\` lists without trusting anything.
    `,
    examples: [
      ["See what this project would run", "$0 trust --show"],
      ["Trust it, after reading it", "$0 trust"],
    ],
  });

  show = Option.Boolean("--show", false, { description: "List what would run and whether it is trusted; record nothing" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("trust", { projectRoot, ...(this.show ? { showOnly: true } : {}) }));
    return this.report.result(result, (out) => {
      if (result.items.length === 0) {
        out.line("nothing in this project's .pu/ runs a command; nothing to trust");
        return;
      }
      for (const item of result.items) {
        const mark = item.trusted ? "trusted" : this.show ? "NOT TRUSTED" : "now trusted";
        out.line(`${mark.padEnd(11)}  ${item.runs}  (${item.file})`);
      }
      if (!this.show) out.line(result.recorded === 0 ? "everything was already trusted" : `trusted ${result.recorded} item${result.recorded === 1 ? "" : "s"}`);
    });
  }
}
