import { Command } from "../../clipanion.js";
import { DefinitionDeleteCommand, NOUNS } from "../../definition-commands.js";

export default class PromptDeleteCommand extends DefinitionDeleteCommand {
  static override paths = [["prompt", "delete"]];
  static override usage = Command.Usage({
    description: "Delete a prompt template",
    examples: [
      ["Delete the project's file", "$0 prompt delete review"],
      ["Delete the global one", "$0 prompt delete review --global"],
    ],
  });
  readonly noun = NOUNS.prompt;
}
