import { Command } from "../../clipanion.js";
import { DefinitionCreateCommand, NOUNS } from "../../definition-commands.js";

export default class SwarmCreateCommand extends DefinitionCreateCommand {
  static override paths = [["swarm", "create"]];
  static override usage = Command.Usage({
    description: "Save a swarm (validated by the daemon before it is written)",
    details: `
      Reads the YAML from \`--file PATH\` or stdin (\`-\`) and saves it as \`.pu/swarms/NAME.yaml\`,
      or \`$PU_HOME/swarms/NAME.yaml\` with \`--global\`. An existing file is only replaced with \`--force\`.
      A file that does not validate is not written; the error names the file and the field.
    `,
    examples: [
      ["Save from a file", "$0 swarm create review-team --file ./review-team.yaml"],
      ["From stdin, for every project", "cat review-team.yaml | $0 swarm create review-team - --global"],
      ["Replace an existing one", "$0 swarm create review-team --file ./review-team.yaml --force"],
    ],
  });
  readonly noun = NOUNS.swarm;
}
