import type { ReadStream } from "node:tty";
import { Command, Option } from "../clipanion.js";
import type { ClientStream } from "@pu/ipc/client";
import { connectDaemon } from "../daemon-client.js";
import { followOutput } from "../follow.js";
import { parseDetachKey } from "../keys.js";
import { PuCommand } from "../pu-command.js";
import { TerminalModeTracker } from "../terminal-modes.js";

type Outcome = { kind: "detached" } | { kind: "exited"; code: number } | { kind: "signal"; signal: NodeJS.Signals } | { kind: "lost" } | { kind: "shutdown" };

export default class AttachCommand extends PuCommand {
  static override paths = [["attach"]];
  static override usage = Command.Usage({
    description: "Connect your terminal to an agent's terminal",
    details: `
      Replays the agent's recent output, then streams it live; your keystrokes go to the agent and
      your window size follows. Detach with Ctrl-\\ (change with \`--detach-key C-x\`); the agent keeps running.
      Without a terminal on stdin this behaves like \`pu logs ID --follow\`.
    `,
    examples: [
      ["Attach to an agent", "$0 attach ag-ab12cd34"],
      ["Detach with Ctrl-Q instead", "$0 attach ag-ab12cd34 --detach-key C-q"],
    ],
  });

  agentId = Option.String({ name: "ID" });
  detachKey = Option.String("--detach-key", "C-\\", { description: "Control key that detaches (default C-\\)" });

  async run(): Promise<number> {
    const detachByte = parseDetachKey(this.detachKey);
    const stdin = process.stdin as ReadStream;
    if (!stdin.isTTY) {
      const client = await connectDaemon();
      try {
        return await followOutput(client, this.report, { agentId: this.agentId });
      } finally {
        client.close();
      }
    }
    const client = await connectDaemon();
    let stream: ClientStream<"attach">;
    try {
      stream = await client.openStream("attach", { agentId: this.agentId });
    } catch (error) {
      client.close();
      throw error;
    }
    const outcome = await this.interact(stream, stdin, detachByte);
    client.close();
    switch (outcome.kind) {
      case "detached":
        this.report.note(`\n[detached from ${this.agentId}]`);
        return 0;
      case "exited":
        this.report.note(`\n[${this.agentId} exited with code ${outcome.code}]`);
        return 0;
      case "signal":
        this.report.note(`\n[detached from ${this.agentId} on ${outcome.signal}]`);
        return 0;
      case "lost":
        this.report.note(`\n[lost the connection to the pu daemon; ${this.agentId} may still be running]`);
        return 4;
      case "shutdown":
        // The daemon's notice, already on screen, said what became of the agent.
        this.report.note(`\n[detached from ${this.agentId}: the pu daemon stopped]`);
        return 4;
    }
  }

  private async interact(stream: ClientStream<"attach">, stdin: ReadStream, detachByte: number): Promise<Outcome> {
    const agentId = this.agentId;
    const { result } = stream;
    let outcome: Outcome | undefined;
    const finish = (o: Outcome) => {
      outcome ??= o;
      stream.close();
    };
    const send = (data: Uint8Array) => {
      stream.request("input", { agentId, data: data as Uint8Array<ArrayBuffer> }).catch(() => {});
    };
    const resize = () => {
      const { columns, rows } = process.stdout;
      if (columns && rows) stream.request("resize", { agentId, cols: columns, rows }).catch(() => {});
    };
    const onInput = (chunk: Buffer) => {
      const at = chunk.indexOf(detachByte);
      if (at < 0) return send(chunk);
      if (at > 0) send(chunk.subarray(0, at));
      finish({ kind: "detached" });
    };
    const onSignal = (signal: NodeJS.Signals) => finish({ kind: "signal", signal });

    // Raw terminal passthrough: the agent's bytes go to the terminal as they come, in either mode.
    const out = this.report.out;
    // Every exit path (detach, agent exit, daemon gone, signal, exception, process exit) restores the terminal.
    const modes = new TerminalModeTracker();
    const wasRaw = stdin.isRaw;
    let restored = false;
    const restore = () => {
      if (restored) return;
      restored = true;
      stdin.off("data", onInput);
      process.off("SIGWINCH", resize);
      for (const s of ["SIGTERM", "SIGHUP", "SIGINT"] as const) process.off(s, onSignal);
      process.off("exit", restore);
      try {
        out.write(modes.resetSequence());
      } catch {
        // the terminal is gone already
      }
      try {
        stdin.setRawMode(wasRaw);
      } catch {
        // the terminal is gone already
      }
      stdin.pause();
    };
    process.on("exit", restore);
    try {
      stdin.setRawMode(true);
      stdin.on("data", onInput);
      stdin.resume();
      process.on("SIGWINCH", resize);
      for (const s of ["SIGTERM", "SIGHUP", "SIGINT"] as const) process.on(s, onSignal);
      resize();
      let position = result.offset;
      if (result.exited && position >= result.endOffset) return { kind: "exited", code: result.exitCode ?? -1 };
      for await (const event of stream) {
        if (event.type === "output") {
          modes.observe(event.data);
          out.write(event.data);
          position = event.offset + event.data.length;
          if (result.exited && position >= result.endOffset) finish({ kind: "exited", code: result.exitCode ?? -1 });
        } else if (event.type === "exit") {
          finish({ kind: "exited", code: event.exitCode });
        } else if (event.type === "notice") {
          // Raw mode: no output post-processing, so the line needs its own carriage return.
          out.write(`\r\n[pu: ${event.message}]\r\n`);
          if (event.code === "SHUTDOWN") finish({ kind: "shutdown" });
        }
        if (outcome) break;
      }
      return outcome ?? { kind: "lost" };
    } finally {
      restore();
    }
  }
}
