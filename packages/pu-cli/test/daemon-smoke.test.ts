import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder } from "@pu/ipc/frame";
import { PU_BIN, runPu } from "./run-pu.js";

/** `pu attach` on a real terminal: util-linux `script` gives it a PTY, our pipe is the keyboard. */
function attachInTerminal(agentId: string, env: Record<string, string>, extraArgs: string[] = []) {
  const command = [process.execPath, PU_BIN, "attach", agentId, ...extraArgs].map((a) => `'${a}'`).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", TERM: "xterm", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  child.stdout.on("data", (d: Buffer) => (screen += d.toString("utf8")));
  child.stderr.on("data", (d: Buffer) => (screen += d.toString("utf8")));
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  return {
    type: (text: string) => child.stdin.write(text),
    screen: () => screen,
    seen: (text: string) => waitFor(`"${text}" on the attached terminal`, () => (screen.includes(text) ? true : undefined)),
    exited,
    kill: () => child.kill("SIGKILL"),
  };
}

// End-to-end through the CLI's own auto-start path: a real daemon (pu-engine's bin) in a temp PU_HOME.

const tempDirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  tempDirs.push(dir);
  return dir;
};

function daemonPid(home: string): number | undefined {
  try {
    const text = readFileSync(path.join(home, "daemon.pid"), "utf8");
    const m = /\d+/.exec(text);
    return m ? Number(m[0]) : undefined;
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const homes: string[] = [];
afterAll(async () => {
  for (const home of homes) {
    const pid = daemonPid(home);
    if (pid !== undefined && alive(pid)) {
      process.kill(pid, "SIGTERM");
      await waitFor("daemon exit", () => (alive(pid) ? undefined : true)).catch(() => process.kill(pid, "SIGKILL"));
    }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe("pu against a real daemon", () => {
  let home: string;
  let repo: string;
  const pu = (...args: string[]) => runPu(args, { cwd: repo, env: { PU_HOME: home } });

  beforeAll(() => {
    home = path.join(tempDir("pu-cli-smoke-"), "home");
    homes.push(home);
    repo = tempDir("pu-cli-repo-");
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
    execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"]);
    mkdirSync(path.join(repo, "sub"));
  });

  it("health starts the daemon on demand", async () => {
    expect(existsSync(home)).toBe(false);
    const r = await pu("health", "--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const health = JSON.parse(r.stdout);
    expect(health).toMatchObject({ home, protocolVersion: 1 });
    expect(alive(health.pid)).toBe(true);
    expect(existsSync(path.join(home, "daemon.log"))).toBe(true);
  });

  it("init creates the project at the git top level, then says it already exists", async () => {
    const first = await runPu(["init"], { cwd: path.join(repo, "sub"), env: { PU_HOME: home } });
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(`initialized pu project in ${repo}\n`);
    expect(existsSync(path.join(repo, ".pu", "manifest.json"))).toBe(true);
    const again = await pu("init", "--json");
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, projectRoot: repo });
  });

  it("status --json gives the report as is", async () => {
    const r = await runPu(["status", "--json"], { cwd: path.join(repo, "sub"), env: { PU_HOME: home } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ projectRoot: repo, worktrees: {}, agents: {} });
  });

  it("spawns a shell, types into it, reads its output and follows it to its exit", async () => {
    const spawned = await pu("spawn", "--agent", "terminal", "--root", "--json");
    expect(spawned.code).toBe(0);
    const { agentId } = JSON.parse(spawned.stdout) as { agentId: string };
    expect(agentId).toMatch(/^ag-[a-z0-9]{8}$/);

    const table = await pu("status");
    expect(table.stdout).toMatch(new RegExp(`\\(root\\)\\s+${agentId}\\s+\\S+\\s+terminal\\s+(streaming|waiting)`));

    expect((await pu("send", agentId, "echo smoke-$((6*7))")).code).toBe(0);
    await waitFor("echo output", async () => ((await pu("logs", agentId)).stdout.includes("smoke-42") ? true : undefined));

    const tail = JSON.parse((await pu("logs", agentId, "--tail", "5", "--json")).stdout);
    expect(tail.endOffset - tail.offset).toBeLessThanOrEqual(5);

    // Not a TTY: attach behaves like `logs --follow` and ends when the agent exits.
    const follower = spawn(process.execPath, [PU_BIN, "attach", agentId], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", PU_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let followed = "";
    follower.stdout.on("data", (d: Buffer) => (followed += d.toString("utf8")));
    const followerCode = new Promise<number>((resolve) => follower.on("close", (code) => resolve(code ?? -1)));
    try {
      // The replay has arrived, so the exit below happens while it is following live.
      await waitFor("the replay in pu attach's output", () => (followed.includes("smoke-42") ? true : undefined));
      expect((await pu("send", agentId, "exit 5")).code).toBe(0);
      expect(await followerCode).toBe(0);
    } finally {
      follower.kill("SIGKILL");
    }

    const status = JSON.parse((await pu("status", "--agent", agentId, "--json")).stdout);
    expect(status.agents[agentId]).toMatchObject({ status: "broken", exitCode: 5 });
  });

  it("attach on a terminal: replay, typing, detach with the agent still running, then its exit", async () => {
    const { agentId } = JSON.parse((await pu("spawn", "--agent", "terminal", "--root", "--json")).stdout) as { agentId: string };
    await pu("send", agentId, "echo replay-$((1+1))");
    await waitFor("first output", async () => ((await pu("logs", agentId)).stdout.includes("replay-2") ? true : undefined));

    const first = attachInTerminal(agentId, { PU_HOME: home });
    try {
      await first.seen("replay-2"); // the replay arrived, so raw mode is on
      first.type("echo typed-$((2+3))\r");
      await first.seen("typed-5");
      first.type("\x1c"); // Ctrl-\\
      expect(await first.exited).toBe(0);
      expect(first.screen()).toContain(`[detached from ${agentId}]`);
    } finally {
      first.kill();
    }
    const afterDetach = JSON.parse((await pu("status", "--agent", agentId, "--json")).stdout);
    expect(afterDetach.agents[agentId].status).not.toBe("broken");

    const second = attachInTerminal(agentId, { PU_HOME: home }, ["--detach-key", "C-q"]);
    try {
      await second.seen("typed-5");
      second.type("exit 4\r");
      expect(await second.exited).toBe(0);
      expect(second.screen()).toContain(`[${agentId} exited with code 4]`);
    } finally {
      second.kill();
    }
  });

  it("status --watch --json prints a line per change and stops cleanly on Ctrl-C", async () => {
    const watcher = spawn(process.execPath, [PU_BIN, "status", "--watch", "--json"], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PU_HOME: home },
    });
    let out = "";
    watcher.stdout.on("data", (d: Buffer) => (out += d.toString("utf8")));
    const exited = new Promise<number | null>((resolve) => watcher.on("exit", (code) => resolve(code)));
    try {
      await waitFor("the first report", () => (out.includes("\n") ? true : undefined));
      const { agentId } = JSON.parse((await pu("spawn", "--agent", "terminal", "--root", "--json")).stdout) as { agentId: string };
      await waitFor("a report with the new agent", () => (out.includes(agentId) ? true : undefined));
      watcher.kill("SIGINT");
      expect(await exited).toBe(0);
      const lines = out.trimEnd().split("\n").map((l) => JSON.parse(l) as { report: { projectRoot: string } });
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(lines.every((l) => l.report.projectRoot === repo)).toBe(true);
      await pu("kill", "--agent", agentId);
    } finally {
      watcher.kill("SIGKILL");
    }
  });

  it("reports a missing agent with exit 3", async () => {
    const r = await pu("logs", "ag-zzzzzzzz");
    expect(r.code).toBe(3);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("daemon status, stop and stop again", async () => {
    const status = JSON.parse((await pu("daemon", "status", "--json")).stdout);
    expect(status).toMatchObject({ running: true, compatible: true });
    const stop = await pu("daemon", "stop");
    expect(stop.code).toBe(0);
    expect(stop.stdout).toBe(`pu daemon stopped (pid ${status.pid})\n`);
    expect(alive(status.pid)).toBe(false);
    expect((await pu("daemon", "stop")).stdout).toBe("pu daemon is not running\n");
  });
});

describe("when the daemon cannot be used", () => {
  it("a daemon that never comes up: exit 4 naming the log", async () => {
    // A directory where the socket goes: the daemon cannot clear it, so it never listens.
    const home = tempDir("pu-cli-nosock-");
    mkdirSync(path.join(home, "daemon.sock"));
    const r = await runPu(["health"], { cwd: tmpdir(), env: { PU_HOME: home } });
    expect(r.code).toBe(4);
    expect(r.stderr.trimEnd()).toBe(`pu: pu daemon did not start within 5s; see ${path.join(home, "daemon.log")}`);
  });

  it("a PU_HOME too long for a Unix socket: exit 1 at once, naming the limit, no daemon started", async () => {
    const home = path.join(tempDir("pu-cli-long-"), "h".repeat(120));
    homes.push(home);
    const r = await runPu(["health"], { cwd: tmpdir(), env: { PU_HOME: home } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^pu: the pu daemon's socket path .* is \d+ bytes, over this system's limit of \d+ for a Unix socket; set PU_HOME to a shorter directory\n$/);
  });

  it("a daemon speaking another protocol: exit 4 with the fix", async () => {
    const home = tempDir("pu-cli-old-");
    const server: Server = createServer((socket) => {
      const decoder = new FrameDecoder();
      socket.on("data", (chunk) => {
        for (const frame of decoder.push(chunk) as { id: number }[]) {
          socket.write(encodeFrame({ type: "helloAck", id: frame.id, protocolVersion: 999, daemonVersion: "9.9.9", pid: process.pid }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(path.join(home, "daemon.sock"), resolve));
    try {
      const r = await runPu(["health"], { cwd: tmpdir(), env: { PU_HOME: home } });
      expect(r.code).toBe(4);
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/protocol/);
      expect(lines[0]).toContain("pu daemon restart");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a daemon at its connection limit: exit 4 at once with its own words, not a wait blamed on recovery", async () => {
    const home = tempDir("pu-cli-full-");
    // What pu's server answers over its limit: an error frame with no id, then the end.
    const server: Server = createServer((socket) => {
      socket.end(encodeFrame({ type: "error", id: null, code: "DAEMON_UNAVAILABLE", message: "pu daemon is at its limit of 512 connections", details: { maxConnections: 512 } }));
      socket.on("error", () => socket.destroy());
      socket.resume();
    });
    await new Promise<void>((resolve) => server.listen(path.join(home, "daemon.sock"), resolve));
    try {
      const started = Date.now();
      const r = await runPu(["health"], { cwd: tmpdir(), env: { PU_HOME: home } });
      expect(r.code).toBe(4);
      expect(r.stderr).toBe("pu: pu daemon is at its limit of 512 connections\n");
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      server.close();
    }
  });
});
