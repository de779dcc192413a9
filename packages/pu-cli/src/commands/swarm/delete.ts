import { Command } from "../../clipanion.js";
import { DefinitionDeleteCommand, NOUNS } from "../../definition-commands.js";

export default class SwarmDeleteCommand extends DefinitionDeleteCommand {
  static override paths = [["swarm", "delete"]];
  static override usage = Command.Usage({
    description: "Delete a swarm definition (agents it started keep running)",
    examples: [
      ["Delete the project's file", "$0 swarm delete review-team"],
      ["Delete the global one", "$0 swarm delete review-team --global"],
    ],
  });
  readonly noun = NOUNS.swarm;
}
