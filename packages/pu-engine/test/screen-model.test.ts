import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentSession } from "../src/session/agent-session.js";
import { OutputRing } from "../src/session/output-ring.js";
import { SCREEN_PARSE_MAX_BYTES, ScreenModel } from "../src/session/screen-model.js";

const models: ScreenModel[] = [];
/** The ring each model reads, as an agent's model reads its session's ring. */
const rings = new Map<ScreenModel, OutputRing>();
function model(cols = 40, rows = 8): ScreenModel {
  const ring = new OutputRing();
  const m = new ScreenModel(ring, cols, rows);
  models.push(m);
  rings.set(m, ring);
  return m;
}
/** What AgentSession does with each PTY read: into the ring, then a note to the model. */
function feedBytes(m: ScreenModel, bytes: Buffer, now?: number): void {
  rings.get(m)!.append(bytes);
  m.noteOutput(now);
}

const sessions: AgentSession[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(models.splice(0).map((m) => m.close()));
  rings.clear();
  await Promise.all(sessions.splice(0).map((s) => s.kill({ graceMs: 500 })));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const ESC = "\x1b";
const feed = (m: ScreenModel, text: string, now?: number) => feedBytes(m, Buffer.from(text), now);

describe("ScreenModel", () => {
  it("renders cursor moves, colours and erases as the text a person sees", async () => {
    const m = model(40, 6);
    feed(m, `${ESC}[2J${ESC}[H${ESC}[1;32mhello${ESC}[0m world\r\n`);
    feed(m, `second line${ESC}[5;3H${ESC}[7mboxed${ESC}[0m`);
    // Overwrite "world" with "there" and erase the rest of the line.
    feed(m, `${ESC}[1;7Hthere${ESC}[K`);
    await m.settle();
    expect(m.rows()).toEqual(["hello there", "second line", "", "", "  boxed", ""]);
    expect(m.cursor).toEqual({ x: 11, y: 0 });
    expect(m.lastNonEmptyLine()).toBe("boxed");
  });

  it("does not parse when told of output: the screen changes only once the output is parsed", async () => {
    const m = model();
    feed(m, "queued text");
    expect(m.rows()[0]).toBe("");
    await m.settle();
    expect(m.rows()[0]).toBe("queued text");
  });

  it("parses queued output on its own, without anyone asking", async () => {
    const m = model();
    feed(m, "arrives later");
    await expect.poll(() => m.rows()[0], { timeout: 2000 }).toBe("arrives later");
  });

  it("parses output sent before a resize at the old size and the rest at the new one", async () => {
    const m = model(10, 4);
    feed(m, "abcdefghijKLM");
    m.resize(20, 4);
    feed(m, "\r\nnopqrstuvwxyz0123456789");
    await m.settle();
    expect(m.cols).toBe(20);
    // Wrapped at 10 columns when it arrived (xterm does not reflow when growing without scrollback to pull from).
    expect(m.rows().slice(0, 2)).toEqual(["abcdefghij", "KLM"]);
    expect(m.rows()[2]).toBe("nopqrstuvwxyz0123456");
    expect(m.rows()[3]).toBe("789");
  });

  it("changes its content hash and change time with the text, not with colours alone", async () => {
    const m = model();
    expect(m.lastContentChange).toBeNull();
    feed(m, "status: thinking", 1000);
    await m.settle();
    const first = m.contentHash;
    expect(m.lastContentChange).toBe(1000);
    // The same text redrawn in another colour: nothing a hung-agent check should count.
    feed(m, `\r${ESC}[31mstatus: thinking${ESC}[0m`, 2000);
    await m.settle();
    expect(m.contentHash).toBe(first);
    expect(m.lastContentChange).toBe(1000);
    feed(m, "\rstatus: done    ", 3000);
    await m.settle();
    expect(m.contentHash).not.toBe(first);
    expect(m.lastContentChange).toBe(3000);
  });

  it("remembers the last OSC 7501 state report and the window title", async () => {
    const m = model();
    feed(m, `${ESC}]0;⠋ codex${ESC}\\${ESC}]7501;state=working:app=codex\x07working…`, 500);
    await m.settle();
    expect(m.reportedState).toEqual({ state: "working", fields: { app: "codex" }, at: 500 });
    expect(m.snapshot().title).toBe("⠋ codex");
    feed(m, `${ESC}]7501;state=idle:app=codex${ESC}\\`, 900);
    await m.settle();
    expect(m.reportedState?.state).toBe("idle");
    // The report is not text on the screen.
    expect(m.rows()[0]).toBe("working…");
  });

  it("under a flood parses only the newest output and still shows the flood's last lines", async () => {
    const m = model(60, 5);
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) lines.push(`line ${String(i).padStart(5, "0")} ${"x".repeat(30)}`);
    // In PTY-sized reads, coloured: whichever read the kept part starts in, no sequence leaks into the text.
    const bytes = Buffer.from(lines.map((l, i) => (i % 7 === 0 ? `${ESC}[1;31m${l}${ESC}[0m` : l)).join("\r\n") + "\r\n");
    expect(bytes.length).toBeGreaterThan(SCREEN_PARSE_MAX_BYTES * 8);
    for (let at = 0; at < bytes.length; at += 4096) feedBytes(m, bytes.subarray(at, at + 4096));
    await m.settle();
    const snap = m.snapshot();
    expect(snap.skippedBytes).toBe(bytes.length - SCREEN_PARSE_MAX_BYTES);
    expect(m.rows()).toEqual([...lines.slice(-4), ""]);
  });

  it("keeps the final screen after close and ignores output fed after it", async () => {
    const m = model();
    feed(m, "last words");
    await m.close();
    expect(m.closed).toBe(true);
    feed(m, "\r\nafter the end");
    expect(m.rows()[0]).toBe("last words");
    expect(m.rows()[1]).toBe("");
    expect(m.snapshot().lines[0]).toBe("last words");
  });
});

describe("AgentSession's screen", () => {
  async function spawn(script: string, cols: number, rows: number): Promise<AgentSession> {
    const dir = await mkdtemp(join(tmpdir(), "pu-screen-"));
    dirs.push(dir);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    const session = AgentSession.spawn({ agentId: "ag-screen", file: "/bin/sh", args: ["-c", script], cwd: dir, env, cols, rows });
    sessions.push(session);
    return session;
  }

  it("shows what a real program drew on its PTY, at the PTY's size, and follows a resize", async () => {
    const session = await spawn(`printf '\\033[2J\\033[Hfirst\\033[3;5Hsecond'; read x; printf '\\033[H\\033[2Jsize %s' "$(stty size)"; read y`, 50, 6);
    await expect.poll(async () => (await session.screen.settle(), session.screen.rows()), { timeout: 10_000 }).toEqual(["first", "", "    second", "", "", ""]);
    session.resize(70, 9);
    session.write("\n");
    await expect.poll(async () => (await session.screen.settle(), session.screen.lastNonEmptyLine()), { timeout: 10_000 }).toBe("size 9 70");
    expect(session.screen.rows()).toHaveLength(9);
    expect(session.screen.cols).toBe(70);
  });

  it("keeps the final screen once the program has exited", async () => {
    const session = await spawn("printf 'goodbye\\n'", 40, 4);
    await session.exited;
    await session.screen.settle();
    expect(session.screen.closed).toBe(true);
    expect(session.screen.lastNonEmptyLine()).toBe("goodbye");
  });
});
