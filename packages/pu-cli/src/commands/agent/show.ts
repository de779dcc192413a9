import type { AgentDefinition } from "@pu/core/definitions";
import { Command } from "../../clipanion.js";
import { DefinitionShowCommand, NOUNS, oneLine } from "../../definition-commands.js";

export default class AgentShowCommand extends DefinitionShowCommand {
  static override paths = [["agent", "show"]];
  static override usage = Command.Usage({
    description: "Print an agent definition and what it starts",
    examples: [
      ["Show an agent definition", "$0 agent show reviewer"],
      ["As JSON (text and parsed form)", "$0 agent show reviewer --json"],
    ],
  });
  readonly noun = NOUNS.agent;

  summarize(parsed: unknown): string[] {
    const def = parsed as AgentDefinition;
    const lines = [`agent type: ${def.agentType}`];
    if (def.command !== undefined) lines.push(`command: ${def.command}`);
    if (def.template !== undefined) lines.push(`prompt: template ${def.template} (see \`pu prompt show ${def.template}\`)`);
    else if (def.inlinePrompt !== undefined) lines.push(`prompt: "${oneLine(def.inlinePrompt)}"`);
    else lines.push("prompt: none");
    if (def.tags !== undefined && def.tags.length > 0) lines.push(`tags: ${def.tags.join(", ")}`);
    return lines;
  }
}
