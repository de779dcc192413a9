import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { checkedName, NOUNS, parseVarPairs, withLookedIn } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";

export default class TriggerAssignCommand extends PuCommand {
  static override paths = [["trigger", "assign"]];
  static override usage = Command.Usage({
    description: "Bind a trigger to a running agent, starting at its first step",
    details: "Replaces any trigger the agent had. Only `on: agent_idle` triggers can be bound to an agent; an agent already waiting gets the first step right away.",
    examples: [
      ["Bind a trigger", "$0 trigger assign ag-ab12cd34 test-and-review"],
      ["With variables", "$0 trigger assign ag-ab12cd34 test-and-review --var SUITE=integration"],
    ],
  });

  agentId = Option.String({ name: "AGENT" });
  name = Option.String({ name: "NAME" });
  vars = Option.Array("--var", [], { description: "Trigger variable KEY=VALUE (repeatable; overrides the file's variables)" });

  async run(): Promise<number> {
    const trigger = checkedName(NOUNS.trigger, this.name);
    const vars = parseVarPairs(this.vars);
    const projectRoot = this.projectRoot();
    const fields = vars === undefined ? { projectRoot, agentId: this.agentId, trigger } : { projectRoot, agentId: this.agentId, trigger, vars };
    let result;
    try {
      result = await withDaemon((client) => client.request("assign_trigger", fields));
    } catch (error) {
      // AGENT_NOT_FOUND keeps the daemon's words; a missing trigger says where it was looked for.
      throw withLookedIn(NOUNS.trigger, trigger, error);
    }
    return this.report.result(result, (out) => {
      const steps = `${result.triggerTotal} ${result.triggerTotal === 1 ? "step" : "steps"}`;
      out.line(`assigned trigger ${result.triggerName} (${steps}) to ${result.agentId}`);
    });
  }
}
