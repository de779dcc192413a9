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

  /** The input writes, in order. Text and its Enter go separately so TUIs do not take Enter as part of a paste. */
  chunks(): Uint8Array<ArrayBuffer>[] {
    if (this.text === undefined && this.keys === undefined) throw new CliUsageError("give TEXT to type or --keys to press");
    // Node's Buffer is typed over ArrayBufferLike; the protocol's bytes over ArrayBuffer (same thing at run time).
    const chunks: Uint8Array<ArrayBuffer>[] = [];
    if (this.text !== undefined) {
      // Control keys go with --keys, by name: a stray \x03 in TEXT would be a Ctrl-C.
      const text = checkPromptText(this.text, "TEXT");
      if (text !== "") chunks.push(Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>);
      if (!this.noEnter) chunks.push(Buffer.from("\r") as Uint8Array<ArrayBuffer>);
    }
    if (this.keys !== undefined) chunks.push(parseKeys(this.keys) as Uint8Array<ArrayBuffer>);
    return chunks;
  }

  async run(): Promise<number> {
    const chunks = this.chunks();
    let bytes = 0;
    await withDaemon(async (client) => {
      for (const data of chunks) bytes += (await client.request("input", { agentId: this.agentId, data })).bytes;
    });
    return this.report.result({ agentId: this.agentId, bytes }, (out) => out.line(`sent ${bytes} byte(s) to ${this.agentId}`));
  }
}
