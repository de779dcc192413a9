import { Command, Option } from "../../clipanion.js";
import { DefinitionCreateCommand, NOUNS } from "../../definition-commands.js";

export default class PromptCreateCommand extends DefinitionCreateCommand {
  static override paths = [["prompt", "create"]];
  static override usage = Command.Usage({
    description: "Save a prompt template (markdown with optional frontmatter and {{VAR}} placeholders)",
    details: `
      Takes the text from \`--body TEXT\`, \`--file PATH\` or stdin (\`-\`) and saves it as \`.pu/templates/NAME.md\`,
      or \`$PU_HOME/templates/NAME.md\` with \`--global\`. An existing template is only replaced with \`--force\`.
    `,
    examples: [
      ["Save a one-line template", '$0 prompt create review --body "Review the changes in {{AREA}} and list the risks"'],
      ["From a file", "$0 prompt create review --file ./review.md"],
      ["From stdin, for every project", "cat review.md | $0 prompt create review - --global"],
    ],
  });
  readonly noun = NOUNS.prompt;
  body = Option.String("--body", { description: "The template's text" });

  override inlineText(): string | undefined {
    return this.body;
  }
}
