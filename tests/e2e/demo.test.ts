// The README's first command ends in `bash scripts/demo.sh`: it must do what it says
// (two terminal agents, status, diffs, one merge, clean-up) and leave no daemon behind.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { isProcessAlive } from "../helpers/wait-for.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "pu-demo-test-"));

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the README's demo", () => {
  it("runs two agents, merges one, cleans up, and stops its daemon", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp, PU_DEMO_KEEP: "1", NO_COLOR: "1" };
    delete env.PU_HOME;
    delete env.PU_AGENT_ID;
    delete env.PU_PROJECT_ROOT;
    const { stdout } = await promisify(execFile)("bash", [path.join(repo, "scripts/demo.sh")], { env, timeout: 110_000 });

    expect(stdout).toMatch(/spawned ag-[a-z0-9]{8} \(terminal\) in worktree wt-[a-z0-9]{8} \(branch pu\/greeting\)/);
    expect(stdout).toMatch(/spawned ag-[a-z0-9]{8} \(terminal\) in worktree wt-[a-z0-9]{8} \(branch pu\/farewell\)/);
    // Both agents finished their task and were seen waiting at their prompt.
    expect(stdout.match(/^wt-\S+ (greeting|farewell) .* waiting /gm)).toHaveLength(2);
    expect(stdout).toMatch(/greeting\.txt +\+1 -0/);
    expect(stdout).toMatch(/merged wt-[a-z0-9]{8} into main/);
    expect(stdout).toContain("greeting.txt on main: hello from agent one");
    expect(stdout).toMatch(/kept wt-[a-z0-9]{8} \(farewell\): 1 commit not merged into its base/);
    expect(stdout).toMatch(/cleaned wt-[a-z0-9]{8}: [^\n]*\n +discarded 1 commit not merged into its base/);
    expect(stdout).toContain("worktrees left: 1 (just the main checkout)");
    expect(stdout).toMatch(/== demo finished/);

    // The demo's own PU_HOME: its daemon logged its pid at start and must be gone now.
    const [work] = readdirSync(tmp).filter((name) => name.startsWith("pu-demo."));
    expect(work).toBeDefined();
    const log = readFileSync(path.join(tmp, work!, "home", "daemon.log"), "utf8");
    const pids = log
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { event: string; pid: number })
      .filter((record) => record.event === "start")
      .map((record) => record.pid);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) expect(isProcessAlive(pid)).toBe(false);
  }, 120_000);
});
