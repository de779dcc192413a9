import { Command } from "../../clipanion.js";
import { DefinitionDeleteCommand, NOUNS } from "../../definition-commands.js";

export default class AgentDeleteCommand extends DefinitionDeleteCommand {
  static override paths = [["agent", "delete"]];
  static override usage = Command.Usage({
    description: "Delete an agent definition",
    examples: [
      ["Delete the project's file", "$0 agent delete reviewer"],
      ["Delete the global one", "$0 agent delete reviewer --global"],
    ],
  });
  readonly noun = NOUNS.agent;
}
