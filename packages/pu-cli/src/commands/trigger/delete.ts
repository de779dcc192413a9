import { Command } from "../../clipanion.js";
import { DefinitionDeleteCommand, NOUNS } from "../../definition-commands.js";

export default class TriggerDeleteCommand extends DefinitionDeleteCommand {
  static override paths = [["trigger", "delete"]];
  static override usage = Command.Usage({
    description: "Delete a trigger file (agents bound to it stop at their next step)",
    examples: [
      ["Delete the project's trigger", "$0 trigger delete review"],
      ["Delete the global one", "$0 trigger delete review --global"],
    ],
  });
  readonly noun = NOUNS.trigger;
}
