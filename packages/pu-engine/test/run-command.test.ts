// The commands pu runs through a host's transport (host check's probe, install, mirror upkeep)
// keep their deadline whatever the command leaves behind.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../src/hosts/run-command.js";
import { isProcessAlive, waitFor } from "./helpers/daemon.js";

const leftover: number[] = [];
afterEach(() => {
  for (const pid of leftover.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

describe("run", () => {
  it("a wrapper that sleeps past the deadline: answered at the deadline, its sleep ended too", async () => {
    const started = Date.now();
    // The sleep holds the pipes, as an exec wrapper's `sleep 120; exec "$@"` did.
    const result = await run(["sh", "-c", 'sleep 30 & echo "$!"; wait'], 500);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result.timedOut).toBe(true);
    const sleepPid = Number(result.stdout.trim());
    leftover.push(sleepPid);
    await waitFor("the wrapper's sleep to be gone", () => !isProcessAlive(sleepPid), 3000);
  }, 10_000);

  it("a command that exits leaving something holding its output is answered without waiting for it", async () => {
    const started = Date.now();
    const result = await run(["sh", "-c", 'sleep 30 & echo "$!"; echo done'], 20_000);
    leftover.push(Number(result.stdout.split("\n")[0]));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result).toMatchObject({ code: 0, timedOut: false });
    expect(result.stdout).toContain("done");
  }, 10_000);

  it("output, exit code and a file on stdin as before", async () => {
    expect(await run(["sh", "-c", "echo out; echo err >&2; exit 3"], 5000)).toEqual({ code: 3, stdout: "out\n", stderr: "err\n", timedOut: false });
    const dir = mkdtempSync(path.join(os.tmpdir(), "pu-run-"));
    try {
      writeFileSync(path.join(dir, "in"), "x".repeat(200_000));
      const result = await run(["cat"], 5000, path.join(dir, "in"));
      expect(result).toMatchObject({ code: 0, timedOut: false });
      expect(result.stdout.length).toBe(200_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await run(["/nonexistent/pu-test"], 5000)).toMatchObject({ code: null, timedOut: false, stderr: expect.stringContaining("ENOENT") });
  });
});
