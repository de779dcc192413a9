import { PuError } from "@pu/core/errors";
import type { LogsResult, ScreenView } from "@pu/ipc/protocol";
import { Command, Option } from "../clipanion.js";
import { connectDaemon, withDaemon } from "../daemon-client.js";
import { followOutput } from "../follow.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export function parseByteCount(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw.trim())) throw new CliUsageError(`${flag} expects a number of bytes, got "${raw}"`);
  return Number(raw.trim());
}

export default class LogsCommand extends PuCommand {
  static override paths = [["logs"]];
  static override usage = Command.Usage({
    description: "Print an agent's recent terminal output",
    details:
      "Raw bytes (escape sequences included) from the agent's output buffer. `--follow` keeps streaming until the agent exits; with `--json` it prints NDJSON lines `{offset, data}`. `--screen` prints the agent's terminal as a person sees it now, as plain text (`--json`: `{lines, cols, rows, cursor, ...}`).",
    examples: [
      ["Everything the buffer holds", "$0 logs ag-ab12cd34"],
      ["The last 4 KiB", "$0 logs ag-ab12cd34 --tail 4096"],
      ["Follow live output", "$0 logs ag-ab12cd34 --follow"],
      ["The rendered screen", "$0 logs ag-ab12cd34 --screen"],
    ],
  });

  agentId = Option.String({ name: "ID" });
  tail = Option.String("--tail", { description: "Only the last BYTES bytes" });
  follow = Option.Boolean("--follow,-f", false, { description: "Keep streaming new output until the agent exits" });
  screen = Option.Boolean("--screen", false, { description: "The rendered screen as plain text instead of raw bytes" });

  async run(): Promise<number> {
    const tail = parseByteCount("--tail", this.tail);
    if (this.screen) {
      if (this.follow || tail !== undefined) throw new CliUsageError("--screen shows the screen as it is now; it takes neither --follow nor --tail");
      return this.printScreen();
    }
    if (this.follow) {
      const client = await connectDaemon();
      try {
        let fromOffset: number | undefined;
        if (tail !== undefined) {
          const now = await client.request("logs", { agentId: this.agentId, tail: 0 });
          fromOffset = Math.max(0, now.endOffset - tail);
        }
        return await followOutput(client, this.report, { agentId: this.agentId, ...(fromOffset === undefined ? {} : { fromOffset }) });
      } finally {
        client.close();
      }
    }
    const fields = tail === undefined ? { agentId: this.agentId } : { agentId: this.agentId, tail };
    const result = await withDaemon((client) => client.request("logs", fields));
    return this.report.result({ agentId: this.agentId, ...result }, (out) => out.write(result.data));
  }

  private async printScreen(): Promise<number> {
    const result: LogsResult = await withDaemon((client) => client.request("logs", { agentId: this.agentId, screen: true }));
    const screen: ScreenView | undefined = result.screen;
    // A daemon from before screens drops the unknown field and sends raw bytes.
    if (!screen) throw new PuError("PROTOCOL_MISMATCH", "the running daemon cannot render screens; restart it with `pu daemon restart`");
    const exit = result.exitCode === undefined ? {} : { exitCode: result.exitCode };
    return this.report.result({ agentId: this.agentId, ...screen, exited: result.exited, ...exit }, (out) => {
      const lines = [...screen.lines];
      while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
      out.write(lines.map((line) => line + "\n").join(""));
    });
  }
}
