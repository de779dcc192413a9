import { Command } from "../../clipanion.js";
import { DefinitionCreateCommand, NOUNS } from "../../definition-commands.js";

export default class TriggerCreateCommand extends DefinitionCreateCommand {
  static override paths = [["trigger", "create"]];
  static override usage = Command.Usage({
    description: "Save a trigger (validated by the daemon before it is written)",
    details: `
      Reads the YAML from \`--file PATH\` or stdin (\`-\`) and saves it as \`.pu/triggers/NAME.yaml\`,
      or \`$PU_HOME/triggers/NAME.yaml\` with \`--global\`. An existing trigger is only replaced with \`--force\`.
      A file that does not validate is not written; the error names the file and the field.
    `,
    examples: [
      ["Save a trigger from a file", "$0 trigger create test-and-review --file ./test-and-review.yaml"],
      ["From stdin, for every project", "cat review.yaml | $0 trigger create review - --global"],
      ["Replace an existing one", "$0 trigger create review --file review.yaml --force"],
    ],
  });
  readonly noun = NOUNS.trigger;
}
