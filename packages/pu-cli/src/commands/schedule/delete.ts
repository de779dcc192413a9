import { Command } from "../../clipanion.js";
import { DefinitionDeleteCommand, NOUNS } from "../../definition-commands.js";

export default class ScheduleDeleteCommand extends DefinitionDeleteCommand {
  static override paths = [["schedule", "delete"]];
  static override usage = Command.Usage({
    description: "Delete a schedule (it stops firing)",
    examples: [
      ["Delete the project's file", "$0 schedule delete nightly"],
      ["Delete the global one", "$0 schedule delete nightly --global"],
    ],
  });
  readonly noun = NOUNS.schedule;
}
