import { Command } from "../../clipanion.js";
import { DefinitionListCommand, NOUNS } from "../../definition-commands.js";

export default class AgentListCommand extends DefinitionListCommand {
  static override paths = [["agent", "list"]];
  static override usage = Command.Usage({
    description: "List agent definitions (the project's .pu/agents, then $PU_HOME/agents)",
    details: "A project's file hides a global one of the same name. Files that do not validate are listed with the reason.",
    examples: [
      ["List them", "$0 agent list"],
      ["As JSON", "$0 agent list --json"],
    ],
  });
  readonly noun = NOUNS.agent;
}
