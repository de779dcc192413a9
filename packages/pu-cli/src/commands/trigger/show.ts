import type { TriggerDefinition } from "@pu/core/definitions";
import { Command } from "../../clipanion.js";
import { DefinitionShowCommand, NOUNS, oneLine } from "../../definition-commands.js";

const EVENTS: Record<string, string> = {
  agent_idle: "runs each time a bound agent waits for input",
  pre_commit: "runs before every commit in a pu worktree",
  pre_push: "runs before every push from a pu worktree",
};

export default class TriggerShowCommand extends DefinitionShowCommand {
  static override paths = [["trigger", "show"]];
  static override usage = Command.Usage({
    description: "Print a trigger's YAML and a summary of its steps",
    examples: [
      ["Show a trigger", "$0 trigger show test-and-review"],
      ["As JSON (text and parsed form)", "$0 trigger show test-and-review --json"],
    ],
  });
  readonly noun = NOUNS.trigger;

  summarize(parsed: unknown): string[] {
    const trigger = parsed as TriggerDefinition;
    const lines = [`event: ${trigger.on} (${EVENTS[trigger.on] ?? "unknown event"})`, "steps:"];
    trigger.sequence.forEach((action, i) => {
      const parts: string[] = [];
      if (action.gate) {
        const retries = action.max_retries > 0 ? `, up to ${action.max_retries} ${action.max_retries === 1 ? "retry" : "retries"}` : "";
        parts.push(`gate \`${action.gate.run}\` (expect exit ${action.gate.expect_exit}, timeout ${action.gate.timeout_seconds}s${retries})`);
      }
      if (action.inject) parts.push(`inject "${oneLine(action.inject)}"`);
      lines.push(`  ${i + 1}. ${parts.join(", then ")}`);
    });
    const vars = Object.entries(trigger.variables ?? {});
    if (vars.length > 0) lines.push(`variables: ${vars.map(([k, v]) => `${k}=${v}`).join(", ")}`);
    return lines;
  }
}
