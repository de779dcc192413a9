import { Command } from "../../clipanion.js";
import { DefinitionCreateCommand, NOUNS } from "../../definition-commands.js";

export default class AgentCreateCommand extends DefinitionCreateCommand {
  static override paths = [["agent", "create"]];
  static override usage = Command.Usage({
    description: "Save an agent definition (validated by the daemon before it is written)",
    details: `
      Reads the YAML from \`--file PATH\` or stdin (\`-\`) and saves it as \`.pu/agents/NAME.yaml\`,
      or \`$PU_HOME/agents/NAME.yaml\` with \`--global\`. An existing file is only replaced with \`--force\`.
      A file that does not validate is not written; the error names the file and the field.
    `,
    examples: [
      ["Save from a file", "$0 agent create reviewer --file ./reviewer.yaml"],
      ["From stdin, for every project", "cat reviewer.yaml | $0 agent create reviewer - --global"],
      ["Replace an existing one", "$0 agent create reviewer --file ./reviewer.yaml --force"],
    ],
  });
  readonly noun = NOUNS.agent;
}
