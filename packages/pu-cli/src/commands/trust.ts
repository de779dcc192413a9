import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";

export default class TrustCommand extends PuCommand {
  static override paths = [["trust"]];
  static override usage = Command.Usage({
    description: "Allow this project's .pu/ files and queued tickets to run what they name",
    details: `
      A cloned repository can carry a \`.pu/\` that makes pu start programs, type text into
      agents' terminals or add flags: custom agent types in \`config.yaml\`, triggers (gates
      and injects) and the \`defaultTrigger\`, workflows (steps, agents, models, launch
      modes, gates), schedules, agent definitions, templates (the plan role templates among
      them), the \`plan:\` settings (checks and role agents), and tickets in
      \`.pu/tickets/queue/\` that you did not create with \`pu ticket create\`. None of them
      runs until you trust it here. \`pu trust\` lists each one with what it runs or types
      and records it as trusted, in \`$PU_HOME/trust.json\`; a later change to what an item
      runs or types asks again. What you save through pu (\`pu trigger create\`, \`pu ticket
      create\`…) is trusted as written. \`--show\` lists without trusting anything.

      A host (\`pu host add\`) keeps its own trust: \`--on HOST\` lists (and trusts there) what the
      project's mirror on that host would run — the \`.pu/\` of this project's current branch,
      pushed to the mirror first (made if no agent was placed there yet).
    `,
    examples: [
      ["See what this project would run", "$0 trust --show"],
      ["Trust it, after reading it", "$0 trust"],
      ["What it would run on a host", "$0 trust --on gpu-box --show"],
    ],
  });

  on = Option.String("--on", { description: "The project's mirror on this host (pu host add), not this machine's copy" });
  show = Option.Boolean("--show", false, { description: "List what would run or be typed and whether it is trusted; record nothing" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const result = await withDaemon((client) => client.request("trust", { projectRoot, ...(this.show ? { showOnly: true } : {}), ...(this.on !== undefined ? { on: this.on } : {}) }));
    return this.report.result(result, (out) => {
      if (result.items.length === 0) {
        out.line("nothing in this project's .pu/ or its queued tickets runs or types anything; nothing to trust");
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
