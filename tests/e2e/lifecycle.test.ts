// The whole agent lifecycle through the real `pu` binary: init, daemon auto-start,
// spawn (worktree and root), status, send/logs, attach (PTY and pipe), logs --follow,
// bench/play and kill — real daemon, real PTYs, real git.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentEntrySchema, WorktreeEntrySchema } from "@pu/core/manifest";
import { allAgents, FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";
import { runPuOnPty } from "../helpers/pty-pu.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";

const ALIVE = ["streaming", "waiting"];

describe("pu lifecycle end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  // Agents shared by the steps below (each step needs the ones before it).
  let terminalAgent: string;
  let fakeWorktreeAgent: string;
  let fakeWorktreeId: string;
  let rootAgent: string;

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-lifecycle-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("pu init starts the daemon on demand, creates the project, then reports created: false", async () => {
    expect(existsSync(path.join(sb.home, "daemon.pid"))).toBe(false);
    const first = await sb.puJson<{ created: boolean; projectRoot: string }>(["init"]);
    expect(first).toMatchObject({ created: true, projectRoot: sb.root });
    expect(existsSync(path.join(sb.root, ".pu", "manifest.json"))).toBe(true);
    const pid = sb.noteDaemonPid();
    expect(pid, "daemon.pid written by the auto-started daemon").toBeDefined();
    expect(isProcessAlive(pid!)).toBe(true);

    const health = await sb.puJson<{ pid: number; home: string }>(["health"]);
    expect(health).toMatchObject({ pid, home: sb.home });

    const again = await sb.puJson<{ created: boolean }>(["init"]);
    expect(again.created).toBe(false);

    // Keep agents "streaming" (not idle-waiting) for the whole file, however slow the machine.
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(config, readFileSync(config, "utf8").replace(/^idleThresholdSeconds:.*$/m, "idleThresholdSeconds: 3600"));
  });

  it("spawns a terminal and the fake agent in worktrees, and the fake agent at the root", async () => {
    const term = await sb.spawnAgent(["--agent", "terminal", "--name", "shell box"]);
    terminalAgent = term.agentId;
    expect(term.worktreeId).toMatch(/^wt-/);
    expect(term.worktreePath && existsSync(term.worktreePath)).toBe(true);
    expect(sb.git(["branch", "--list", "pu/shell-box"])).toContain("pu/shell-box");

    const fake = await sb.spawnAgent(["--command", `${FAKE_AGENT_COMMAND} --no-prompt`, "--name", "fake-wt"]);
    fakeWorktreeAgent = fake.agentId;
    fakeWorktreeId = fake.worktreeId!;
    expect(fake.cwd).toBe(fake.worktreePath);

    const root = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND]);
    rootAgent = root.agentId;
    expect(root.worktreeId).toBeUndefined();
    expect(root.cwd).toBe(sb.root);

    await sb.waitForLogs(fakeWorktreeAgent, "fake-agent ready");
    await sb.waitForLogs(rootAgent, "fake-agent ready");
    // The fake agent prints its cwd-independent banner; the worktree one runs in the worktree.
    expect(sb.git(["worktree", "list"])).toContain(fake.worktreePath);
  });

  it("status --json matches the manifest schemas and carries the live fields", async () => {
    const report = await sb.status();
    expect(report.projectRoot).toBe(sb.root);
    for (const wt of Object.values(report.worktrees)) {
      const parsed = WorktreeEntrySchema.safeParse(wt);
      expect(parsed.success, `worktree ${wt.id}: ${parsed.error?.message}`).toBe(true);
    }
    const agents = allAgents(report);
    expect(agents.map((a) => a.id).sort()).toEqual([terminalAgent, fakeWorktreeAgent, rootAgent].sort());
    for (const agent of agents) {
      const parsed = AgentEntrySchema.safeParse(agent);
      expect(parsed.success, `agent ${agent.id}: ${parsed.error?.message}`).toBe(true);
      expect(agent.live).toBe(true);
      expect(ALIVE).toContain(agent.status);
      expect(ALIVE).toContain(agent.storedStatus);
      expect(typeof agent.idleSeconds).toBe("number");
      expect(isProcessAlive(agent.pid!)).toBe(true);
    }
    expect(report.agents[rootAgent]).toBeDefined();
    expect(report.worktrees[fakeWorktreeId]!.agents[fakeWorktreeAgent]!.worktreeId).toBe(fakeWorktreeId);
    expect(report.worktrees[fakeWorktreeId]).toMatchObject({ name: "fake-wt", branch: "pu/fake-wt", status: "active" });
  });

  it("send types into the agent and the reply shows in logs", async () => {
    await sb.ok(["send", rootAgent, "echo hello from send"]);
    // The PTY echoes the typed line; the agent's own answer is the line without "echo ".
    await sb.waitForLogs(rootAgent, /\nhello from send\r?\n/);
  });

  it('send --keys "C-c" interrupts a sleep in a terminal agent', async () => {
    // The shell prompt: "$ ", or "# " when the tests run as root.
    await sb.waitForLogs(terminalAgent, /[$#] $/);
    // "sleeping-5" only shows once the shell runs the line, so the sleep is surely under way.
    await sb.ok(["send", terminalAgent, "echo sleeping-$((2+3)); sleep 300"]);
    await sb.waitForLogs(terminalAgent, /\nsleeping-5\r?\n/);
    await sb.ok(["send", terminalAgent, "--keys", "C-c"]);
    // Only a shell that got its prompt back evaluates this; the typed text alone never shows "after-2".
    await sb.ok(["send", terminalAgent, "echo after-$((1+1))"]);
    await sb.waitForLogs(terminalAgent, /\nafter-2\r?\n/);
  });

  it("attach on a real terminal replays, echoes typing, detaches on Ctrl-\\ with exit 0, and the agent lives on", async () => {
    const attach = runPuOnPty(sb, ["attach", rootAgent]);
    try {
      await attach.seen("fake-agent ready");
      const before = attach.screen().length;
      attach.type("echo typed through attach\r");
      await attach.seen("\ntyped through attach", before);
      attach.type("\x1c");
      const exit = await attach.exited;
      expect(exit.exitCode).toBe(0);
      expect(attach.screen()).toContain(`detached from ${rootAgent}`);
    } finally {
      attach.kill();
    }
    const agent = await sb.agent(rootAgent);
    expect(agent.live).toBe(true);
    expect(ALIVE).toContain(agent.status);
  });

  it("attach without a terminal streams like logs --follow, and logs --follow exits 0 when the agent exits", async () => {
    const streamer = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND, "--name", "streamer"]);
    await sb.waitForLogs(streamer.agentId, "fake-agent ready");
    const attached = sb.startPu(["attach", streamer.agentId]);
    const followed = sb.startPu(["logs", streamer.agentId, "--follow"]);
    for (const p of [attached, followed]) await waitFor("the replay", () => p.output().includes("fake-agent ready"));

    await sb.ok(["send", streamer.agentId, "echo streamed live"]);
    for (const p of [attached, followed]) await waitFor("live output", () => /\nstreamed live\r?\n/.test(p.output()));

    await sb.ok(["send", streamer.agentId, "exit 5"]);
    expect(await followed.exited).toEqual({ code: 0, signal: null });
    expect(await attached.exited).toEqual({ code: 0, signal: null });
    const gone = await sb.waitForAgent(streamer.agentId, "is broken", (a) => a.status === "broken");
    expect(gone.exitCode).toBe(5);
  });

  it("bench suspends an agent (suspended, waiting) and play brings it back streaming with a new pid", async () => {
    const before = await sb.agent(fakeWorktreeAgent);
    const oldPid = before.pid!;
    const bench = await sb.puJson<{ suspended: string[] }>(["bench", fakeWorktreeAgent]);
    expect(bench.suspended).toEqual([fakeWorktreeAgent]);
    const benched = await sb.agent(fakeWorktreeAgent);
    expect(benched).toMatchObject({ suspended: true, status: "waiting" });
    await waitFor("the benched process to be gone", () => !isProcessAlive(oldPid));

    const play = await sb.puJson<{ agent: { id: string; pid: number } }>(["play", fakeWorktreeAgent]);
    expect(play.agent.id).toBe(fakeWorktreeAgent);
    const resumed = await sb.waitForAgent(fakeWorktreeAgent, "is streaming again", (a) => a.status === "streaming" && a.live);
    expect(resumed.suspended ?? false).toBe(false);
    expect(resumed.pid).toBeDefined();
    expect(resumed.pid).not.toBe(oldPid);
    expect(isProcessAlive(resumed.pid!)).toBe(true);
    await sb.waitForLogs(fakeWorktreeAgent, `fake-agent ready pid=${resumed.pid}`);
  });

  it("kill --agent stops an agent and reports its exit code", async () => {
    const term = await sb.agent(terminalAgent);
    const killed = await sb.pu(["kill", "--agent", terminalAgent]);
    expect(killed.code).toBe(0);
    // A shell ignores SIGTERM; the SIGHUP that follows ends it (128 + 1).
    expect(killed.stdout).toBe(`killed ${terminalAgent} (exit 129)\n`);
    expect(isProcessAlive(term.pid!)).toBe(false);

    const fake = await sb.puJson<{ killed: { agentId: string; exitCode: number | null }[] }>(["kill", "--agent", fakeWorktreeAgent]);
    // The fake agent honours SIGTERM (128 + 15).
    expect(fake.killed).toEqual([{ agentId: fakeWorktreeAgent, exitCode: 143 }]);

    const after = await sb.agent(terminalAgent);
    expect(after).toMatchObject({ status: "broken", exitCode: 129, live: false });
  });
});
