import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { checkPromptText } from "@pu/core/prompt-text";
import { parseKeys } from "../keys.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class SendCommand extends PuCommand {
  static override paths = [["send"]];
  static override usage = Command.Usage({
    description: "Type text or keys into an agent's terminal",
    details: "TEXT is followed by Enter unless `--no-enter`. `--keys` sends named keys after the text: C-a..C-z, Enter, Tab, Escape, Backspace, Space, Up, Down, Left, Right, Home, End, PageUp, PageDown, Delete.",
    examples: [
      ["Answer a prompt", '$0 send ag-ab12cd34 "yes"'],
      ["Type without submitting", '$0 send ag-ab12cd34 "draft" --no-enter'],
      ["Interrupt the agent", '$0 send ag-ab12cd34 --keys "C-c"'],
      ["Pick the second menu entry", '$0 send ag-ab12cd34 --keys "Down Enter"'],
    ],
  });

  agentId = Option.String({ name: "ID" });
  text = Option.String({ required: false, name: "TEXT" });
  noEnter = Option.Boolean("--no-enter", false, { description: "Do not press Enter after TEXT" });
  keys = Option.String("--keys", { description: 'Named keys, e.g. "C-c Enter Up"' });

  async run(): Promise<number> {
    if (this.text === undefined && this.keys === undefined) throw new CliUsageError("give TEXT to type or --keys to press");
    // Control keys go with --keys, by name: a stray \x03 in TEXT would be a Ctrl-C.
    const text = this.text === undefined ? undefined : checkPromptText(this.text, "TEXT");
    // Node's Buffer is typed over ArrayBufferLike; the protocol's bytes over ArrayBuffer (same thing at run time).
    const keys = this.keys === undefined ? undefined : (parseKeys(this.keys) as Uint8Array<ArrayBuffer>);
    let bytes = 0;
    await withDaemon(async (client) => {
      // The daemon types the text the way this agent's CLI takes it (a paste, then Enter as its own key after a pause).
      if (text !== undefined && (text !== "" || !this.noEnter)) bytes += (await client.request("type_text", { agentId: this.agentId, text, submit: !this.noEnter })).bytes;
      if (keys !== undefined) bytes += (await client.request("input", { agentId: this.agentId, data: keys })).bytes;
    });
    return this.report.result({ agentId: this.agentId, bytes }, (out) => out.line(`sent ${bytes} byte(s) to ${this.agentId}`));
  }
}
