import { Command } from "../../clipanion.js";
import { DefinitionListCommand, NOUNS } from "../../definition-commands.js";

export default class SwarmListCommand extends DefinitionListCommand {
  static override paths = [["swarm", "list"]];
  static override usage = Command.Usage({
    description: "List swarms (the project's .pu/swarms, then $PU_HOME/swarms)",
    details: "A project's file hides a global one of the same name. Files that do not validate are listed with the reason.",
    examples: [
      ["List them", "$0 swarm list"],
      ["As JSON", "$0 swarm list --json"],
    ],
  });
  readonly noun = NOUNS.swarm;
}
