// The rendered screen through the real `pu` binary and daemon: `pu logs --screen` (text and
// --json), the last screen line, content hash and change time in `pu status`, and the final
// screen of an agent that has exited. The agent is a shell script drawing with escapes.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

interface ScreenJson {
  agentId: string;
  cols: number;
  rows: number;
  lines: string[];
  cursor: { x: number; y: number };
  alternateScreen: boolean;
  title: string;
  contentHash: string;
  lastContentChange: string | null;
  exited: boolean;
  exitCode?: number;
}

// Clears, sets a title, draws in colour at positions, then waits for a line; the second
// screen replaces the first and ends with the cursor after "done".
const DRAWING = String.raw`printf '\033]0;drawing\007\033[2J\033[H\033[1;32mready\033[0m to draw\n'
printf '\033[5;10H\033[7mboxed\033[0m\033[8;1Hstep 1 of 2'
read answer
printf '\033[H\033[2Jgot: %s\n\033[31mstep 2 of 2\033[0m: done' "$answer"
read finish
printf '\n\033[1mbye\033[0m\n'
`;

describe("the rendered screen end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let agentId: string;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-screen-");
    await sb.ok(["init"]);
    const script = path.join(sb.home, "draw.sh");
    writeFileSync(script, DRAWING);
    agentId = (await sb.spawnAgent(["--root", "--command", `/bin/sh ${script}`])).agentId;
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  const screenText = async () => sb.ok(["logs", agentId, "--screen"]);

  it("pu logs --screen prints what a person sees, without escapes; plain pu logs stays raw", async () => {
    const text = await waitFor("the first screen", async () => {
      const out = await screenText();
      return out.includes("step 1 of 2") ? out : undefined;
    });
    expect(text).toBe(["ready to draw", "", "", "", "         boxed", "", "", "step 1 of 2", ""].join("\n"));
    expect(text).not.toMatch(/\x1b/);
    const raw = await sb.logs(agentId);
    expect(raw).toContain("\x1b[7mboxed");
  });

  it("pu logs --screen --json gives the rows, the size and the cursor", async () => {
    const screen = await sb.puJson<ScreenJson>(["logs", agentId, "--screen"]);
    expect(screen).toMatchObject({ agentId, cols: 120, rows: 40, cursor: { x: 11, y: 7 }, alternateScreen: false, title: "drawing", exited: false });
    expect(screen.lines).toHaveLength(40);
    expect(screen.lines.slice(0, 8)).toEqual(["ready to draw", "", "", "", "         boxed", "", "", "step 1 of 2"]);
    expect(screen.contentHash).toMatch(/^[0-9a-f]{16}$/);
    expect(Date.parse(screen.lastContentChange ?? "")).not.toBeNaN();
  });

  it("pu status carries the last screen line, the content hash and when the content last changed", async () => {
    const before = await sb.agent(agentId);
    expect(before.lastScreenLine).toBe("step 1 of 2");
    expect(before.contentHash).toMatch(/^[0-9a-f]{16}$/);
    const changedBefore = Date.parse(String(before.lastContentChange));
    expect(changedBefore).not.toBeNaN();
    const table = await sb.ok(["status"]);
    expect(table).toMatch(new RegExp(`${agentId}.*\\n  └ step 1 of 2\\n`));

    // Same screen, same hash: asking again changes nothing.
    expect((await sb.agent(agentId)).contentHash).toBe(before.contentHash);

    await sb.ok(["send", agentId, "yes"]);
    const after = await sb.waitForAgent(agentId, "shows the second screen", (a) => a.lastScreenLine === "step 2 of 2: done");
    expect(after.contentHash).not.toBe(before.contentHash);
    expect(Date.parse(String(after.lastContentChange))).toBeGreaterThan(changedBefore);
    expect(await screenText()).toBe("got: yes\nstep 2 of 2: done\n");
  });

  it("keeps the final screen after the agent exits", async () => {
    await sb.ok(["send", agentId, "--keys", "Enter"]);
    await sb.waitForAgent(agentId, "exits", (a) => a.exitCode !== undefined);
    const screen = await sb.puJson<ScreenJson>(["logs", agentId, "--screen"]);
    expect(screen).toMatchObject({ exited: true, exitCode: 0 });
    expect(screen.lines.filter(Boolean)).toEqual(["got: yes", "step 2 of 2: done", "bye"]);
  });

  it("refuses --screen with --follow or --tail as a usage error", async () => {
    for (const extra of [["--follow"], ["--tail", "10"]]) {
      const run = await sb.pu(["logs", agentId, "--screen", ...extra]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--screen/);
    }
  });
});
