import type { TemplateDefinition } from "@pu/core/definitions";
import { Command } from "../../clipanion.js";
import { DefinitionShowCommand, NOUNS } from "../../definition-commands.js";

export default class PromptShowCommand extends DefinitionShowCommand {
  static override paths = [["prompt", "show"]];
  static override usage = Command.Usage({
    description: "Print a prompt template and the variables it uses",
    examples: [
      ["Show a template", "$0 prompt show review"],
      ["As JSON (text and parsed form)", "$0 prompt show review --json"],
    ],
  });
  readonly noun = NOUNS.prompt;

  summarize(parsed: unknown): string[] {
    const template = parsed as TemplateDefinition;
    const lines = [
      template.variables.length === 0
        ? "variables: none"
        : `variables: ${template.variables.join(", ")} (pass them with --var NAME=VALUE)`,
    ];
    if (template.agent !== undefined) lines.push(`agent: ${template.agent}`);
    if (template.command !== undefined) lines.push(`command: ${template.command}`);
    return lines;
  }
}
