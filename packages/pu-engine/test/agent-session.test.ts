import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isPuError } from "@pu/core/errors";
import { AgentSession } from "../src/session/agent-session.js";
import type { ViewerSink } from "../src/session/ring-viewer.js";
import { isAlive } from "../src/process-info.js";

const FAKE_AGENT = fileURLToPath(new URL("./fixtures/fake-agent.mjs", import.meta.url));

let dir: string;
const sessions: AgentSession[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pu-session-"));
});

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.kill({ graceMs: 500 })));
  await rm(dir, { recursive: true, force: true });
});

function env(): Record<string, string> {
  const copy: Record<string, string> = { PU_HOME: join(dir, "home") };
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "PU_HOME") copy[k] = v;
  return copy;
}

function spawnShell(script: string, opts: { ringBytes?: number } = {}): AgentSession {
  const session = AgentSession.spawn({ agentId: "ag-test", file: "/bin/sh", args: ["-c", script], cwd: dir, env: env(), ...opts });
  sessions.push(session);
  return session;
}

function spawnFake(args: string[] = [], opts: { ringBytes?: number; cols?: number; rows?: number } = {}): AgentSession {
  const session = AgentSession.spawn({
    agentId: "ag-fake",
    file: process.execPath,
    args: [FAKE_AGENT, ...args],
    cwd: dir,
    env: env(),
    ...opts,
  });
  sessions.push(session);
  return session;
}

const ringText = (s: AgentSession) => s.ring.read(0).data.toString("utf8");

async function waitFor(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const waitForOutput = (s: AgentSession, pattern: RegExp) => waitFor(() => pattern.test(ringText(s)), `output ${pattern}`);

/** A sink that records everything; `stuck` makes it report a full buffer and hold back drains. */
class RecordingSink implements ViewerSink {
  chunks: { data: Buffer; offset: number }[] = [];
  notices: { message: string; skippedBytes: number }[] = [];
  exitCode: number | null = null;
  stuck = false;
  private drainWaiters: (() => void)[] = [];

  sendOutput(data: Buffer, offset: number): boolean {
    this.chunks.push({ data: Buffer.from(data), offset });
    return !this.stuck;
  }
  sendNotice(message: string, skippedBytes: number): void {
    this.notices.push({ message, skippedBytes });
  }
  sendExit(exitCode: number): void {
    this.exitCode = exitCode;
  }
  bufferedBytes(): number {
    return this.stuck ? 1 << 30 : 0;
  }
  onDrain(cb: () => void): void {
    this.drainWaiters.push(cb);
  }
  release(): void {
    this.stuck = false;
    for (const cb of this.drainWaiters.splice(0)) cb();
  }
  get bytes(): Buffer {
    return Buffer.concat(this.chunks.map((c) => c.data));
  }
  /** Every chunk starts where the previous one ended (no gap, no overlap). */
  contiguous(): boolean {
    return this.chunks.every((c, i) => i === 0 || c.offset === this.chunks[i - 1]!.offset + this.chunks[i - 1]!.data.length);
  }
}

describe("AgentSession", () => {
  it("records output in the ring with offsets that add up", async () => {
    const session = spawnFake();
    const seen: { offset: number; length: number }[] = [];
    session.onOutput((chunk, offset) => seen.push({ offset, length: chunk.length }));
    await waitForOutput(session, /fake-agent ready pid=\d+/);
    session.write("spam 50\r");
    await waitForOutput(session, /spam done/);
    let expected = seen[0]!.offset;
    for (const { offset, length } of seen) {
      expect(offset).toBe(expected);
      expected += length;
    }
    expect(session.ring.endOffset).toBe(expected);
    expect(ringText(session)).toContain(`fake-agent ready pid=${session.pid}`);
    expect(session.exitCode).toBeNull();
  });

  it("reports the program's own exit code, after its last output is in the ring", async () => {
    const session = spawnShell("printf 'last words before exit'; exit 3");
    const atExit = new Promise<string>((resolve) => session.onExit(() => resolve(ringText(session))));
    await expect(session.exited).resolves.toBe(3);
    expect(session.exitCode).toBe(3);
    expect(await atExit).toContain("last words before exit");
  });

  it("reports 128 + signal when the program dies from a signal", async () => {
    const session = spawnShell("kill -TERM $$; sleep 5");
    await expect(session.exited).resolves.toBe(128 + 15);
  });

  it("kill ends a well-behaved agent with SIGTERM", async () => {
    const session = spawnFake();
    await waitForOutput(session, /> $/);
    await expect(session.kill({ graceMs: 10_000 })).resolves.toBe(128 + 15);
    expect(isAlive(session.pid)).toBe(false);
  });

  it("kill escalates to SIGKILL for a group that ignores SIGTERM, children included", async () => {
    const session = spawnFake(["--ignore-term"]);
    await waitForOutput(session, /> $/);
    session.write("child\r");
    await waitForOutput(session, /child \d+/);
    const child = Number(/child (\d+)/.exec(ringText(session))![1]);
    expect(isAlive(child)).toBe(true);
    await expect(session.kill({ graceMs: 500 })).resolves.toBe(128 + 9);
    expect(ringText(session)).toContain("ignoring SIGTERM");
    await waitFor(() => !isAlive(child) && !isAlive(session.pid), "the agent and its child to be gone");
  });

  it("delivers input to the program", async () => {
    const session = spawnFake();
    await waitForOutput(session, /> $/);
    session.write(Buffer.from("echo marco-polo\r"));
    // The terminal echoes the typed line; the agent's own answer starts a line of its own.
    await waitForOutput(session, /\r\nmarco-polo\r\n/);
  });

  it("passes a resize on to the program's terminal", async () => {
    const session = spawnFake([], { cols: 100, rows: 30 });
    await waitForOutput(session, /> $/);
    session.write("size\r");
    await waitForOutput(session, /size 30 100/);
    session.resize(57, 21);
    expect([session.cols, session.rows]).toEqual([57, 21]);
    session.write("size\r");
    await waitForOutput(session, /size 21 57/);
  });

  it("refuses to spawn a program that does not exist", () => {
    let error: unknown;
    try {
      AgentSession.spawn({ agentId: "ag-x", file: "pu-no-such-program", args: [], cwd: dir, env: env() });
    } catch (err) {
      error = err;
    }
    expect(isPuError(error) && error.code).toBe("SPAWN_FAILED");
  });

  describe("viewers", () => {
    it("two viewers get identical bytes, including a replay from offset 0", async () => {
      const session = spawnFake();
      await waitForOutput(session, /> $/);
      const early = new RecordingSink();
      session.addViewer(0, early);
      session.write("spam 300\r");
      await waitForOutput(session, /spam 150\r\n/);
      const late = new RecordingSink();
      const lateViewer = session.addViewer(0, late);
      expect(lateViewer.startOffset).toBe(0);
      session.write("exit 0\r");
      await session.exited;
      await waitFor(() => early.exitCode !== null && late.exitCode !== null, "both viewers to see the exit");
      const all = session.ring.read(0).data;
      expect(early.bytes.equals(all)).toBe(true);
      expect(late.bytes.equals(all)).toBe(true);
      expect(late.chunks[0]!.offset).toBe(0);
      expect(early.contiguous() && late.contiguous()).toBe(true);
      expect(early.exitCode).toBe(0);
      expect(early.notices).toEqual([]);
    });

    it("a viewer attached after the exit gets the replay and then the exit", async () => {
      const session = spawnShell("printf 'goodbye'; exit 7");
      await session.exited;
      const sink = new RecordingSink();
      const viewer = session.addViewer(undefined, sink);
      await waitFor(() => sink.exitCode !== null, "the exit event");
      expect(sink.bytes.toString()).toContain("goodbye");
      expect(sink.exitCode).toBe(7);
      expect(viewer.closed).toBe(true);
    });

    it("a stalled viewer neither blocks the agent nor the other viewer, and learns what it missed", async () => {
      const ringBytes = 32 * 1024;
      const session = spawnFake([], { ringBytes });
      await waitForOutput(session, /> $/);
      const fast = new RecordingSink();
      const stalled = new RecordingSink();
      stalled.stuck = true;
      const fastViewer = session.addViewer(undefined, fast);
      session.addViewer(undefined, stalled);
      await new Promise((r) => setImmediate(r));
      // ~150 KB: several times the ring, all while one viewer accepts nothing.
      session.write("spam 20000\r");
      await waitForOutput(session, /spam done\r\n/);
      session.write("exit 5\r");
      await expect(session.exited).resolves.toBe(5);

      await waitFor(() => fast.exitCode !== null, "the fast viewer to see the exit");
      expect(fast.notices).toEqual([]);
      expect(fast.contiguous()).toBe(true);
      const fastText = fast.bytes.toString();
      const lines = fastText.match(/^spam \d+\r$/gm)!;
      expect(lines.length).toBe(20000);
      expect(lines[19999]).toBe("spam 20000\r");
      expect(fastViewer.nextOffset).toBe(session.ring.endOffset);

      // The stalled viewer was never fed past its first chunk and has not seen the exit.
      expect(stalled.exitCode).toBeNull();
      const before = stalled.bytes.length;
      stalled.release();
      await waitFor(() => stalled.exitCode !== null, "the stalled viewer to catch up");
      expect(stalled.notices.length).toBe(1);
      const skipped = stalled.notices[0]!.skippedBytes;
      expect(skipped).toBeGreaterThan(0);
      expect(stalled.notices[0]!.message).toContain(`skipped ${skipped} bytes`);
      // What it got plus what it was told it missed is the whole output, and it ends like the fast one.
      expect(before + skipped + (stalled.bytes.length - before)).toBe(session.ring.endOffset);
      expect(stalled.bytes.subarray(-1000).equals(fast.bytes.subarray(-1000))).toBe(true);
      expect(stalled.exitCode).toBe(5);
    });

    it("a closed viewer is sent nothing more", async () => {
      const session = spawnFake();
      await waitForOutput(session, /> $/);
      const sink = new RecordingSink();
      const viewer = session.addViewer(undefined, sink);
      await waitFor(() => sink.bytes.toString().includes("> "), "the replay");
      viewer.close();
      const received = sink.bytes.length;
      session.write("echo after-close\r");
      await waitForOutput(session, /\r\nafter-close\r\n/);
      session.write("exit 0\r");
      await session.exited;
      expect(sink.bytes.length).toBe(received);
      expect(sink.exitCode).toBeNull();
    });
  });
});
