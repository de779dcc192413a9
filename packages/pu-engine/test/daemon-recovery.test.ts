import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { parseManifest } from "@pu/core/manifest";
import { spawn } from "node:child_process";
import { connectClient } from "@pu/ipc/client";
import {
  cleanupAll,
  DAEMON_BIN,
  daemonEnv,
  FAKE_AGENT_COMMAND,
  isProcessAlive,
  makeProject,
  makeTempHome,
  manifestAgent,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  waitFor,
} from "./helpers/daemon.js";
import * as path from "node:path";

afterEach(cleanupAll);

describe("recovery after a daemon crash", () => {
  it("reconciles agents of a SIGKILLed daemon and leaves no orphan process", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, "agents:\n  fakeclaude:\n    command: " + FAKE_AGENT_COMMAND + "\n    resumeArgs: [--resumed]\n");
    // A terminal agent that survives its PTY closing (SIGHUP) and ignores SIGTERM: a true orphan.
    const shell = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: "trap '' HUP TERM; echo survivor; printf '$ '; while :; do sleep 1; done",
    });
    const resumable = await client.request("spawn", { projectRoot: repo.root, agent: "fakeclaude", name: "resumable" });
    const pids = [shell.agent.pid ?? -1, resumable.agent.pid ?? -1];
    pids.forEach(trackAgentPid);
    await waitFor("both agents to be up", async () => {
      const report = await client.request("status", { projectRoot: repo.root });
      return [shell.agentId, resumable.agentId].every((id) => {
        const view = report.agents[id] ?? report.worktrees[resumable.worktreeId ?? ""]?.agents[id];
        return view?.status === "waiting";
      });
    });

    await daemon.crash();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Precondition: the shell agent outlived its daemon (the fake agent may have died of SIGHUP).
    expect(isProcessAlive(shell.agent.pid ?? -1)).toBe(true);
    const second = await startTestDaemon(daemon.home);
    const manifestFile = path.join(repo.root, ".pu", "manifest.json");
    expect(() => parseManifest(readFileSync(manifestFile, "utf8"), manifestFile)).not.toThrow();
    expect(manifestAgent(repo.root, shell.agentId)).toMatchObject({
      status: "broken",
      error: "lost: the daemon stopped while it was running",
    });
    expect(manifestAgent(repo.root, shell.agentId)?.completedAt).toBeDefined();
    expect(manifestAgent(repo.root, resumable.agentId)).toMatchObject({ status: "waiting", suspended: true });
    for (const pid of pids) expect(isProcessAlive(pid), `agent pid ${pid} left running`).toBe(false);
    expect(readFileSync(path.join(daemon.home, "daemon.log"), "utf8")).toContain('"event":"recovery"');

    // The resumable one comes back through the new daemon.
    const client2 = await second.client();
    const resumed = await client2.request("resume", { projectRoot: repo.root, agentId: resumable.agentId });
    trackAgentPid(resumed.agent.pid);
    await waitFor("the resumed agent's output", async () =>
      Buffer.from((await client2.request("logs", { agentId: resumable.agentId })).data).toString().includes("arg --resumed"),
    );
    await expect(client2.request("logs", { agentId: shell.agentId })).rejects.toMatchObject({
      code: "AGENT_NOT_FOUND",
      message: `no output held for ${shell.agentId} (the daemon has restarted since it ran)`,
    });
  });

  it("never touches a process whose pid was reused", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    await daemon.crash();
    // Point the record at this test process with a start time that is not its own.
    const file = path.join(repo.root, ".pu", "manifest.json");
    const { writeFileSync } = await import("node:fs");
    const text = readFileSync(file, "utf8")
      .replace(`"pid": ${spawned.agent.pid}`, `"pid": ${process.pid}`)
      .replace(/"pidStartTime": "\d+"/, '"pidStartTime": "1"');
    writeFileSync(file, text);
    await startTestDaemon(daemon.home);
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(manifestAgent(repo.root, spawned.agentId)).toMatchObject({ status: "broken", pid: process.pid });
  });
  it("adopts a pu worktree a crashed spawn left unrecorded, and leaves unknown directories alone", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    // What a spawn cut short between `git worktree add` and its manifest write leaves behind.
    const orphan = path.join(repo.root, ".pu", "worktrees", "wt-orphan01");
    repo.git(["worktree", "add", "-q", "-b", "pu/half-done", orphan, "main"]);
    const stray = path.join(repo.root, ".pu", "worktrees", "wt-stray001");
    mkdirSync(stray);
    await daemon.crash();

    const second = await startTestDaemon(daemon.home);
    const adopted = readManifest(repo.root).worktrees["wt-orphan01"];
    expect(adopted).toMatchObject({ id: "wt-orphan01", name: "half-done", branch: "pu/half-done", baseBranch: "main", path: orphan, status: "active", agents: {} });
    // Its pre_commit/pre_push gates are enforced like in any pu worktree.
    expect(repo.git(["config", "--worktree", "--get", "core.hooksPath"], orphan)).toContain(path.join(daemon.home, "hooks"));
    expect(readManifest(repo.root).worktrees["wt-stray001"]).toBeUndefined();
    expect(existsSync(stray)).toBe(true);

    // Adopted means usable: it can be cleaned like any other worktree.
    const client2 = await second.client();
    const cleaned = await client2.request("clean", { projectRoot: repo.root, worktreeId: "wt-orphan01" });
    expect(cleaned.cleaned[0]).toMatchObject({ worktreeId: "wt-orphan01", removedPath: true, deletedBranch: true });
    expect(existsSync(orphan)).toBe(false);
    expect(repo.git(["branch", "--list", "pu/half-done"])).toBe("");
  });
  it("settles a merge the daemon died in: rolled back (half-done merge aborted) or, if the base has the work, merged", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawnWithCommit = async (name: string) => {
      const s = await client.request("spawn", { projectRoot: repo.root, name, command: "sleep 60" });
      trackAgentPid(s.agent.pid);
      repo.commit({ [`${name}.txt`]: `${name}\n` }, `${name} work`, s.worktreePath);
      return s;
    };
    const half = await spawnWithCommit("half");
    const landed = await spawnWithCommit("landed");
    const mainBefore = repo.head();
    // What the crash left: a merge of pu/half begun in the main checkout, pu/landed merged but not recorded.
    repo.git(["merge", "--no-ff", "--no-commit", "pu/half"]);
    await daemon.crash();
    repo.git(["merge", "--abort"]);
    repo.git(["merge", "--no-ff", "-q", "-m", "landed", "pu/landed"]);
    const mainWithLanded = repo.head();
    repo.git(["merge", "--no-ff", "--no-commit", "pu/half"]);
    expect(existsSync(path.join(repo.root, ".git", "MERGE_HEAD"))).toBe(true);
    const file = path.join(repo.root, ".pu", "manifest.json");
    const m = JSON.parse(readFileSync(file, "utf8")) as { worktrees: Record<string, { status: string }> };
    m.worktrees[half.worktreeId ?? ""]!.status = "merging";
    m.worktrees[landed.worktreeId ?? ""]!.status = "merging";
    writeFileSync(file, JSON.stringify(m, null, 2));

    await startTestDaemon(daemon.home);
    const after = readManifest(repo.root).worktrees;
    expect(after[half.worktreeId ?? ""]).toMatchObject({ status: "active", error: expect.stringContaining("nothing was merged (the half-done merge was aborted)") });
    expect(after[landed.worktreeId ?? ""]).toMatchObject({ status: "merged", mergedAt: expect.any(String) });
    expect(existsSync(path.join(repo.root, ".git", "MERGE_HEAD"))).toBe(false);
    expect(repo.head()).toBe(mainWithLanded);
    expect(repo.head()).not.toBe(mainBefore);
    expect(repo.git(["status", "--porcelain", "--untracked-files=no"])).toBe("");
  });
  it("stops what an agent started in the background (a nohup child) when its daemon was SIGKILLed", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: "nohup sleep 300 >/dev/null 2>&1 & echo $! > child.pid; echo started; exec sleep 300",
    });
    trackAgentPid(spawned.agent.pid);
    const childPidFile = path.join(repo.root, "child.pid");
    const child = await waitFor("the background child's pid", () => (existsSync(childPidFile) ? Number(readFileSync(childPidFile, "utf8")) || undefined : undefined));
    trackAgentPid(child);
    await daemon.crash();
    // The PTY's hangup takes the agent; the nohup child ignores it and lives on.
    await waitFor("the agent itself to go", () => !isProcessAlive(spawned.agent.pid ?? -1), 10_000);
    expect(isProcessAlive(child)).toBe(true);

    await startTestDaemon(daemon.home);
    await waitFor("recovery to stop the background child", () => !isProcessAlive(child), 15_000);
  });
  it("never stops the pu that started it from inside an agent, though it carries that agent's environment", async () => {
    const home = makeTempHome();
    // What `pu spawn` typed in an agent's shell does when no daemon runs: start one and wait for it.
    const script = `const { spawn } = require("node:child_process");
      const d = spawn(process.execPath, [${JSON.stringify(DAEMON_BIN)}, "--home", ${JSON.stringify(home)}], { stdio: "ignore" });
      console.log(d.pid); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ["-e", script], { env: { ...daemonEnv(home), PU_AGENT_ID: "ag-parent01" }, stdio: ["ignore", "pipe", "ignore"] });
    trackAgentPid(parent.pid);
    let out = "";
    parent.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const daemonPid = await waitFor("the daemon's pid", () => Number(out.trim()) || undefined);
    trackAgentPid(daemonPid);
    const client = await waitFor("the daemon to answer", () =>
      connectClient({ socketPath: path.join(home, "daemon.sock"), clientName: "t", timeoutMs: 2000 }).catch(() => undefined),
    );
    expect(isProcessAlive(parent.pid ?? -1)).toBe(true);
    await client.request("shutdown", {});
    client.close();
    await waitFor("the daemon to stop", () => !isProcessAlive(daemonPid));
    parent.kill("SIGKILL");
  });
});
