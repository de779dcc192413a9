import { Command } from "../../clipanion.js";
import { DefinitionListCommand, NOUNS } from "../../definition-commands.js";

export default class PromptListCommand extends DefinitionListCommand {
  static override paths = [["prompt", "list"]];
  static override usage = Command.Usage({
    description: "List prompt templates (the project's .pu/templates, then $PU_HOME/templates)",
    details: "A project's file hides a global one of the same name. Files that do not validate are listed with the reason.",
    examples: [
      ["List them", "$0 prompt list"],
      ["As JSON", "$0 prompt list --json"],
    ],
  });
  readonly noun = NOUNS.prompt;
}
