import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  isAlive,
  isSameProcess,
  killProcessGroup,
  processStartTime,
  terminateProcessGroup,
} from "../src/process-info.js";

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) {
    if (child.pid === undefined) continue;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** A detached shell (its own process group, like an agent), not waited on by anyone else. */
function startGroup(script: string): { leader: ChildProcess; lines: Promise<string[]> } {
  const leader = spawn("/bin/sh", ["-c", script], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
  started.push(leader);
  const lines = new Promise<string[]>((resolve) => {
    let out = "";
    leader.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) resolve(out.split("\n"));
    });
  });
  return { leader, lines };
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("process-info", () => {
  it("reads a start time that identifies this very process", () => {
    const start = processStartTime(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(isSameProcess(process.pid, start!)).toBe(true);
    expect(isSameProcess(process.pid, String(Number(start) + 1))).toBe(false);
    expect(isAlive(process.pid)).toBe(true);
  });

  it("reports nothing for a pid that does not exist", () => {
    // Above the kernel's pid_max ceiling (4194304), so never a real pid.
    expect(processStartTime(5_000_000)).toBeNull();
    expect(isAlive(5_000_000)).toBe(false);
    expect(isSameProcess(5_000_000, "1")).toBe(false);
    expect(killProcessGroup(5_000_000, "SIGTERM")).toBe(false);
  });

  it("parses the start time even when the command name contains spaces and parentheses", async () => {
    // The name in /proc/<pid>/stat comes from the executed file's name, so exec a link with an awkward one.
    const dir = await mkdtemp(join(tmpdir(), "pu-procinfo-"));
    try {
      const link = join(dir, "a) (b c");
      await symlink("/bin/sleep", link);
      const { leader, lines } = startGroup(`echo ready; exec '${link}' 30`);
      await lines;
      await waitFor(() => readFileSync(`/proc/${leader.pid}/stat`, "utf8").includes("(a) (b c)"));
      const start = processStartTime(leader.pid!);
      // Ground truth: field 22, counted from the end of the line to avoid the name entirely.
      const fields = readFileSync(`/proc/${leader.pid}/stat`, "utf8").trim().split(" ");
      expect(start).toBe(fields[fields.length - 52 + 21]);
      expect(isSameProcess(leader.pid!, start!)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("terminates a whole group that honours SIGTERM without escalating", async () => {
    const { leader, lines } = startGroup(`sleep 60 & echo "child $!"; echo ready; wait`);
    const child = Number((await lines).find((l) => l.startsWith("child "))!.split(" ")[1]);
    expect(isAlive(child)).toBe(true);
    await expect(terminateProcessGroup(leader.pid!, { graceMs: 10_000 })).resolves.toBe("exited");
    await waitFor(() => !isAlive(child) && !isAlive(leader.pid!));
  });

  it("kills a group that ignores SIGTERM after the grace period, children included", async () => {
    const { leader, lines } = startGroup(`trap '' TERM; sleep 60 & echo "child $!"; echo ready; wait`);
    const child = Number((await lines).find((l) => l.startsWith("child "))!.split(" ")[1]);
    await expect(terminateProcessGroup(leader.pid!, { graceMs: 500 })).resolves.toBe("killed");
    await waitFor(() => !isAlive(child) && !isAlive(leader.pid!));
  });
});
