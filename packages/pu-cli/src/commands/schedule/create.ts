import { Command } from "../../clipanion.js";
import { DefinitionCreateCommand, NOUNS } from "../../definition-commands.js";

export default class ScheduleCreateCommand extends DefinitionCreateCommand {
  static override paths = [["schedule", "create"]];
  static override usage = Command.Usage({
    description: "Save a schedule (validated by the daemon before it is written)",
    details: `
      Reads the YAML from \`--file PATH\` or stdin (\`-\`) and saves it as \`.pu/schedules/NAME.yaml\`,
      or \`$PU_HOME/schedules/NAME.yaml\` with \`--global\`. An existing file is only replaced with \`--force\`.
      A file that does not validate is not written; the error names the file and the field.
    `,
    examples: [
      ["Save from a file", "$0 schedule create nightly --file ./nightly.yaml"],
      ["From stdin, for every project", "cat nightly.yaml | $0 schedule create nightly - --global"],
      ["Replace an existing one", "$0 schedule create nightly --file ./nightly.yaml --force"],
    ],
  });
  readonly noun = NOUNS.schedule;
}
