// An agent that floods its terminal and exits at once must not lose the end of its output.
// libuv takes a hang-up on the PTY plus a short read for end of file, although the
// kernel still holds the last KiB the agent wrote; before the fix most runs of the
// flood below lost 2–15 KiB (the final lines: an agent's summary or its error).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentSession } from "../src/session/agent-session.js";
import type { ViewerSink } from "../src/session/ring-viewer.js";
import { cleanupAll, makeProject, startTestDaemon, trackAgentPid, waitFor } from "./helpers/daemon.js";

const RUNS = 12;
const LINES = 200_000;
/** What the flood looks like through the terminal (onlcr turns \n into \r\n). */
const EXPECTED_SEQ = Array.from({ length: LINES }, (_, i) => `${i + 1}\r\n`).join("");
const MARKER = "FINAL-SUMMARY: all done";

let dir: string;
const sessions: AgentSession[] = [];
const strayPids: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pu-exit-output-"));
});

afterEach(async () => {
  for (const pid of strayPids.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await Promise.all(sessions.splice(0).map((s) => s.kill({ graceMs: 500 })));
  await rm(dir, { recursive: true, force: true });
});

function env(): Record<string, string> {
  const copy: Record<string, string> = { PU_HOME: join(dir, "home") };
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "PU_HOME") copy[k] = v;
  return copy;
}

function spawn(file: string, args: string[]): AgentSession {
  // A ring larger than the flood, so every byte must still be there at the end.
  const session = AgentSession.spawn({ agentId: "ag-flood", file, args, cwd: dir, env: env(), ringBytes: 4 * 1024 * 1024 });
  sessions.push(session);
  return session;
}

const ringText = (s: AgentSession) => s.ring.read(0).data.toString("latin1");

/** Tells where two long outputs part, instead of printing megabytes. */
function describeLoss(actual: string, expected: string): string {
  if (actual === expected) return "complete";
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  return `got ${actual.length} of ${expected.length} bytes; first difference at ${i}: ${JSON.stringify(actual.slice(i, i + 40))}`;
}

class CollectingSink implements ViewerSink {
  readonly chunks: Buffer[] = [];
  exitCode: number | null = null;
  private exitWaiter: (() => void) | undefined;
  readonly exited = new Promise<void>((resolve) => (this.exitWaiter = resolve));

  sendOutput(data: Buffer): boolean {
    this.chunks.push(Buffer.from(data));
    return true;
  }
  sendNotice(message: string): void {
    throw new Error(`unexpected notice: ${message}`);
  }
  sendExit(exitCode: number): void {
    this.exitCode = exitCode;
    this.exitWaiter?.();
  }
  bufferedBytes(): number {
    return 0;
  }
  onDrain(cb: () => void): void {
    setImmediate(cb);
  }
  text(): string {
    return Buffer.concat(this.chunks).toString("latin1");
  }
}

describe("output of an agent that exits right after a flood", () => {
  it(`the ring holds every line of seq 1 ${LINES}, run after run`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const session = spawn("seq", ["1", String(LINES)]);
      expect(await session.exited).toBe(0);
      expect(describeLoss(ringText(session), EXPECTED_SEQ), `run ${run + 1}`).toBe("complete");
    }
  }, 180_000);

  it("an attached viewer gets every byte and the final marker before the exit event", async () => {
    const script = join(dir, "flood.mjs");
    // Writes ~1.5 MB in one go and a final marker, then exits at once (as an agent printing its summary).
    await writeFile(
      script,
      `const line = "x".repeat(99) + "\\n";\nprocess.stdout.write(line.repeat(15000));\nprocess.stdout.write(${JSON.stringify(MARKER)} + "\\n");\nprocess.exit(7);\n`,
    );
    const expected = `${"x".repeat(99)}\r\n`.repeat(15000) + `${MARKER}\r\n`;
    for (let run = 0; run < RUNS; run++) {
      const session = spawn(process.execPath, [script]);
      const sink = new CollectingSink();
      session.addViewer(undefined, sink);
      expect(await session.exited).toBe(7);
      await sink.exited;
      expect(sink.exitCode).toBe(7);
      expect(describeLoss(sink.text(), expected), `viewer, run ${run + 1}`).toBe("complete");
      expect(describeLoss(ringText(session), expected), `ring, run ${run + 1}`).toBe("complete");
    }
  }, 180_000);

  // A PTY's session leader exiting sends SIGHUP to its process group, so only a job that
  // ignores hang-ups (as here, set before the job is forked so the exit cannot beat it)
  // or one in another process group (a job-control shell's background job) outlives the agent.
  it("output a background job writes shortly after the agent exits still lands before the exit", async () => {
    const session = spawn("/bin/sh", ["-c", `trap "" HUP; seq 1 50000; (sleep 1; echo late-from-background) & exit 0`]);
    expect(await session.exited).toBe(0);
    const tail = ringText(session).slice(-200);
    expect(tail).toContain("50000\r\n");
    expect(tail).toContain("late-from-background\r\n");
  }, 60_000);

  it("a background job that keeps the terminal open does not hold the agent's exit back for ever", async () => {
    const session = spawn("/bin/sh", ["-c", `trap "" HUP; seq 1 50000; sleep 120 & echo "background-pid=$!"; exit 5`]);
    const code = await exitWithin(session, 30_000);
    const pid = /background-pid=(\d+)/.exec(ringText(session))?.[1];
    if (pid) strayPids.push(Number(pid));
    expect(code).toBe(5);
    expect(pid).toBeDefined();
    expect(ringText(session).slice(-200)).toContain("50000\r\n");
  }, 60_000);

  it("nor does a background job that never stops writing", async () => {
    const session = spawn("/bin/sh", [
      "-c",
      `trap "" HUP; (while :; do echo tick; sleep 0.1; done) & echo "background-pid=$!"; echo agent-done; exit 6`,
    ]);
    const code = await exitWithin(session, 30_000);
    const pid = /background-pid=(\d+)/.exec(ringText(session))?.[1];
    if (pid) strayPids.push(Number(pid));
    expect(code).toBe(6);
    expect(pid).toBeDefined();
    expect(ringText(session)).toContain("agent-done\r\n");
  }, 60_000);
});

describe("pu logs after an agent that exits right after a flood", () => {
  afterEach(cleanupAll);

  it("holds the flood's last line, and the daemon counts every byte", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    for (let run = 0; run < 4; run++) {
      const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: `seq 1 ${LINES}` });
      trackAgentPid(spawned.agent.pid);
      const logs = await waitFor(
        "the agent's exit",
        async () => {
          const reply = await client.request("logs", { agentId: spawned.agentId });
          return reply.exited ? reply : undefined;
        },
        60_000,
      );
      const text = Buffer.from(logs.data).toString("latin1");
      expect(logs.endOffset, `run ${run + 1}`).toBe(EXPECTED_SEQ.length);
      expect(logs.offset + text.length, `run ${run + 1}`).toBe(EXPECTED_SEQ.length);
      expect(describeLoss(text, EXPECTED_SEQ.slice(logs.offset)), `run ${run + 1}`).toBe("complete");
    }
  }, 180_000);
});

/** The exit code, or "hung" when the exit is not reported in (a generous) `ms`. */
function exitWithin(session: AgentSession, ms: number): Promise<number | "hung"> {
  return Promise.race([session.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), ms).unref())]);
}
