// AgentSession over a terminal the test makes itself (the injected SpawnPty): the session's
// own rules — output into the ring and the screen, Enter marking a submit, resize, replay
// then live output to a viewer, the exit code — checked in-process in milliseconds, beside
// the real-PTY tests in agent-session.test.ts.
import { describe, expect, it } from "vitest";
import { AgentSession } from "../src/session/agent-session.js";
import type { ViewerSink } from "../src/session/ring-viewer.js";
import type { PtyProcess, PtySpawnOptions, SpawnPty } from "../src/session/pty.js";

/** A terminal in echo mode: what is typed comes back, Enter answers with a line and a prompt. */
class EchoTerminal implements PtyProcess {
  // No process stands behind this terminal; the tests never ask the session to signal it.
  readonly pid = 0x7ffffff0;
  readonly sizes: [number, number][] = [];
  private dataListeners: ((data: Buffer) => void)[] = [];
  private exitListeners: ((exit: { exitCode: number; signal?: number }) => void)[] = [];

  constructor(readonly options: PtySpawnOptions) {}

  onData(listener: (data: Buffer) => void): void {
    this.dataListeners.push(listener);
  }
  onExit(listener: (exit: { exitCode: number; signal?: number }) => void): void {
    this.exitListeners.push(listener);
  }
  write(data: string): void {
    for (const ch of data) this.emit(ch === "\r" ? `\r\nyou typed a line\r\n$ ` : ch);
  }
  resize(cols: number, rows: number): void {
    this.sizes.push([cols, rows]);
  }
  emit(text: string): void {
    for (const listener of this.dataListeners) listener(Buffer.from(text));
  }
  exit(exitCode: number, signal?: number): void {
    for (const listener of this.exitListeners) listener(signal === undefined ? { exitCode } : { exitCode, signal });
  }
}

function sessionOverEcho(): { session: AgentSession; terminal: EchoTerminal } {
  let terminal: EchoTerminal | undefined;
  const spawnPty: SpawnPty = (_file, _args, options) => (terminal = new EchoTerminal(options));
  const session = AgentSession.spawn({ agentId: "ag-fakepty1", file: "/bin/sh", args: [], cwd: process.cwd(), env: { TERM: "xterm-256color" }, cols: 60, rows: 10, spawnPty });
  return { session, terminal: terminal! };
}

function collectingSink(): ViewerSink & { text: () => string; exitCode?: number } {
  const chunks: Buffer[] = [];
  const sink = {
    exitCode: undefined as number | undefined,
    sendOutput: (data: Buffer) => (chunks.push(Buffer.from(data)), true),
    sendNotice: () => undefined,
    sendExit: (code: number) => void (sink.exitCode = code),
    bufferedBytes: () => 0,
    onDrain: () => undefined,
    text: () => Buffer.concat(chunks).toString("utf8"),
  };
  return sink;
}

describe("AgentSession over an injected terminal", () => {
  it("starts the terminal at the asked size and renders what it prints", async () => {
    const { session, terminal } = sessionOverEcho();
    expect(terminal.options).toMatchObject({ cols: 60, rows: 10, name: "xterm-256color" });
    terminal.emit("welcome\r\n$ ");
    await session.screen.settle();
    expect(session.screen.rows().slice(0, 2).map((r) => r.trimEnd())).toEqual(["welcome", "$"]);
    expect(session.ring.read().data.toString()).toBe("welcome\r\n$ ");
    terminal.exit(0);
    expect(await session.exited).toBe(0);
  });

  it("marks a submit only when Enter is typed, and passes a resize on", async () => {
    const { session, terminal } = sessionOverEcho();
    session.write("ls");
    expect(session.submittedAt).toBe(0);
    const before = Date.now();
    session.write("\r");
    expect(session.submittedAt).toBeGreaterThanOrEqual(before);
    await session.screen.settle();
    expect(session.screen.lastNonEmptyLine().trim()).toBe("$");
    session.resize(100, 30);
    expect(terminal.sizes.at(-1)).toEqual([100, 30]);
    expect([session.cols, session.rows]).toEqual([100, 30]);
    terminal.exit(0);
    await session.exited;
  });

  it("gives a viewer the replay and then live output, and the exit code (128 + signal on a signal)", async () => {
    const { session, terminal } = sessionOverEcho();
    terminal.emit("before\r\n");
    const sink = collectingSink();
    session.addViewer(0, sink);
    terminal.emit("after\r\n");
    terminal.exit(3);
    expect(await session.exited).toBe(3);
    expect(session.exitCode).toBe(3);
    await expect.poll(() => sink.text()).toBe("before\r\nafter\r\n");
    await expect.poll(() => sink.exitCode).toBe(3);

    const killed = sessionOverEcho();
    killed.terminal.exit(0, 15);
    expect(await killed.session.exited).toBe(128 + 15);
  });
});
