// The daemon's life as a user drives it: auto-start, `pu daemon stop` (agents, pid and
// socket gone), auto-start again, `pu daemon restart`, and a PU_HOME it cannot use.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DAEMON_NODE_FLAGS } from "@pu/core/daemon-process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";
import { runPuOnPty } from "../helpers/pty-pu.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";

describe("pu daemon end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-daemon-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  const socket = () => path.join(sb.home, "daemon.sock");
  const pidFile = () => path.join(sb.home, "daemon.pid");

  it("daemon stop ends the daemon and its agents, removes pid file and socket; the next command starts it again", async () => {
    await sb.puJson(["init"]);
    const first = sb.noteDaemonPid()!;
    expect(isProcessAlive(first)).toBe(true);
    expect(existsSync(socket())).toBe(true);
    const agent = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND]);
    const agentPid = (await sb.agent(agent.agentId)).pid!;
    expect(isProcessAlive(agentPid)).toBe(true);

    const stop = await sb.ok(["daemon", "stop"]);
    expect(stop).toBe(`pu daemon stopped (pid ${first})\n`);
    expect(isProcessAlive(first)).toBe(false);
    expect(isProcessAlive(agentPid)).toBe(false);
    expect(existsSync(socket())).toBe(false);
    expect(existsSync(pidFile())).toBe(false);
    const notRunning = await sb.pu(["daemon", "status", "--json"]);
    expect(notRunning.code).toBe(4);
    expect((JSON.parse(notRunning.stdout) as { running: boolean }).running).toBe(false);

    const health = await sb.puJson<{ pid: number }>(["health"]);
    expect(health.pid).not.toBe(first);
    expect(isProcessAlive(health.pid)).toBe(true);
    expect(sb.noteDaemonPid()).toBe(health.pid);
    // Started with the daemon's Node flags (its young generation; see @pu/core/daemon-process).
    const argv = readFileSync(`/proc/${health.pid}/cmdline`, "utf8").split("\0");
    expect(argv.slice(1, 1 + DAEMON_NODE_FLAGS.length)).toEqual(DAEMON_NODE_FLAGS);
    // Shutdown records the agents it stopped as suspended, so `pu play` can bring them back.
    const after = await sb.agent(agent.agentId);
    expect(after).toMatchObject({ live: false, suspended: true, status: "waiting" });
  });

  it("attached viewers, followers and watchers are told the daemon stopped and how to resume their agent, and exit 4", async () => {
    const agent = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND]);
    await sb.waitForLogs(agent.agentId, "fake-agent ready");
    const follower = sb.startPu(["logs", agent.agentId, "--follow"]);
    const watcher = sb.startPu(["status", "--watch", "--json"]);
    const attached = runPuOnPty(sb, ["attach", agent.agentId]);
    try {
      await waitFor("the follower's replay", () => follower.output().includes("fake-agent ready"));
      await waitFor("the watcher's first report", () => watcher.output().includes(agent.agentId));
      await attached.seen("fake-agent ready");

      await sb.ok(["daemon", "stop"]);
      expect((await attached.exited).exitCode).toBe(4);
      const screen = attached.screen();
      expect(screen).toContain(`[pu: the pu daemon is stopping; ${agent.agentId} is suspended`);
      expect(screen).toContain(`[detached from ${agent.agentId}: the pu daemon stopped]`);
    } finally {
      attached.kill();
    }
    const [followed, watched] = await Promise.all([follower.exited, watcher.exited]);
    expect(followed.code).toBe(4);
    expect(follower.stderr().trim()).toBe(`pu: the pu daemon is stopping; ${agent.agentId} is suspended (\`pu play ${agent.agentId}\` resumes it)`);
    expect(watched.code).toBe(4);
    expect(watcher.stderr()).toContain("the pu daemon is stopping; its running agents are suspended");
    expect(await sb.agent(agent.agentId)).toMatchObject({ suspended: true, status: "waiting" });
  });

  it("after a daemon SIGKILL, pu status shows the dead agent's pid as what it was, not as a running process", async () => {
    const agent = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND]);
    const agentPid = (await sb.agent(agent.agentId)).pid!;
    await sb.sigkillDaemon();
    // The next daemon stops the orphan (pid and start time) and records the agent as lost.
    const after = await waitFor("the agent to be recorded gone", async () => {
      const a = await sb.agent(agent.agentId);
      return !a.live && !isProcessAlive(agentPid) ? a : undefined;
    });
    expect(after).toMatchObject({ live: false, status: "broken", pid: agentPid });
    const row = (await sb.ok(["status"])).split("\n").find((line) => line.includes(agent.agentId))!;
    expect(row).toMatch(new RegExp(`broken\\s+-\\s+- \\(was ${agentPid}\\)$`));
  });

  it("daemon restart replaces the running daemon with a new one", async () => {
    const before = sb.noteDaemonPid()!;
    const restart = await sb.puJson<{ stoppedPid: number | null; pid: number }>(["daemon", "restart"]);
    expect(restart.stoppedPid).toBe(before);
    expect(restart.pid).not.toBe(before);
    expect(isProcessAlive(before)).toBe(false);
    expect(isProcessAlive(restart.pid)).toBe(true);
    expect(sb.noteDaemonPid()).toBe(restart.pid);
    expect((await sb.puJson<{ pid: number }>(["health"])).pid).toBe(restart.pid);
  });

  it("a world-writable PU_HOME is refused with the reason, and no daemon starts there", async () => {
    const open = path.join(sb.base, "open-home");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const run = await sb.pu(["health"], { env: { PU_HOME: open } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^pu: .*open-home.*world-writable.*\n$/);
    expect(existsSync(path.join(open, "daemon.pid"))).toBe(false);
    expect(existsSync(path.join(open, "daemon.sock"))).toBe(false);
  });

  it("a PU_HOME that is a file is refused with one clear line", async () => {
    const file = path.join(sb.base, "home-is-a-file");
    writeFileSync(file, "not a directory\n");
    const run = await sb.pu(["health"], { env: { PU_HOME: file } });
    expect([1, 4]).toContain(run.code);
    expect(run.stderr).toMatch(/^pu: .*home-is-a-file.*\n$/);
    expect(run.stderr).not.toMatch(/\n./);
  });
});
