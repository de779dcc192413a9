import { Command } from "../../clipanion.js";
import { DefinitionListCommand, NOUNS } from "../../definition-commands.js";

export default class TriggerListCommand extends DefinitionListCommand {
  static override paths = [["trigger", "list"]];
  static override usage = Command.Usage({
    description: "List triggers (the project's .pu/triggers, then $PU_HOME/triggers)",
    details: "A project's trigger hides a global one of the same name. Files that do not validate are listed with the reason.",
    examples: [
      ["List triggers", "$0 trigger list"],
      ["As JSON", "$0 trigger list --json"],
    ],
  });
  readonly noun = NOUNS.trigger;
}
