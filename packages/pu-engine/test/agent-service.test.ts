// AgentService's target rules for `pu kill` and `pu bench`, in-process: the sessions run
// over terminals the test makes (the injected SpawnPty), each standing for a `sleep` in its
// own process group so the service's real stop path (SIGTERM to the group, the exit written
// to the manifest) runs unchanged. No daemon, no socket, no agent CLI.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findAgent, newManifest, type AgentEntry } from "@pu/core/manifest";
import { manifestPath } from "@pu/core/paths";
import { AgentService } from "../src/agents/agent-service.js";
import { OwnedWork } from "../src/agents/owners.js";
import { registerSession } from "../src/agents/registry.js";
import { openDaemonLog } from "../src/daemon-log.js";
import { ProjectRegistry } from "../src/projects.js";
import { AgentSession } from "../src/session/agent-session.js";
import type { PtyProcess, SpawnPty } from "../src/session/pty.js";
import { EngineState } from "../src/state.js";

/** A terminal with no PTY behind it, whose process is `child`: its exit is the terminal's. */
function terminalOf(child: ChildProcess): SpawnPty {
  return () => {
    const exits: ((exit: { exitCode: number; signal?: number }) => void)[] = [];
    child.once("exit", (code, signal) => {
      const exit = signal ? { exitCode: 0, signal: os.constants.signals[signal] } : { exitCode: code ?? 0 };
      for (const listener of exits) listener(exit);
    });
    const term: PtyProcess = {
      pid: child.pid!,
      onData: () => undefined,
      onExit: (listener) => void exits.push(listener),
      write: () => undefined,
      resize: () => undefined,
    };
    return term;
  };
}

describe("AgentService: what kill and suspend act on, and what they leave", () => {
  let base: string;
  let root: string;
  let state: EngineState;
  let service: AgentService;
  const children: ChildProcess[] = [];

  const entry = (id: string, extra: Partial<AgentEntry> = {}): AgentEntry => ({
    id,
    name: id,
    agentType: "terminal",
    status: "streaming",
    startedAt: new Date().toISOString(),
    ...extra,
  });

  /** An agent in the manifest, running over a fake terminal unless `running` is false. */
  async function addAgent(id: string, { worktreeId, running = true, suspended = false }: { worktreeId?: string; running?: boolean; suspended?: boolean } = {}): Promise<void> {
    await state.updateManifest(root, (m) => {
      const agents = worktreeId ? m.worktrees[worktreeId]!.agents : m.agents;
      agents[id] = entry(id, suspended ? { suspended: true, status: "waiting" } : running ? {} : { status: "broken" });
    });
    if (!running) return;
    const child = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
    children.push(child);
    const session = AgentSession.spawn({ agentId: id, file: "/bin/sh", args: [], cwd: root, env: {}, spawnPty: terminalOf(child) });
    const { entryReady } = registerSession(state, { agentId: id, projectRoot: root, agentType: "terminal", cwd: root, session, idleThresholdSeconds: 5, ...(worktreeId ? { worktreeId } : {}) });
    entryReady();
  }

  beforeEach(async () => {
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-agent-service-")));
    root = path.join(base, "project");
    mkdirSync(path.join(root, ".pu"), { recursive: true });
    const manifest = newManifest(root);
    manifest.worktrees["wt-one"] = { id: "wt-one", name: "one", path: path.join(root, ".pu/worktrees/wt-one"), branch: "pu/one", status: "active", agents: {}, createdAt: new Date().toISOString() };
    writeFileSync(manifestPath(root), JSON.stringify(manifest));
    state = new EngineState(path.join(base, "home"), new ProjectRegistry(path.join(base, "projects.json")), openDaemonLog(path.join(base, "daemon.log")));
    service = new AgentService(state);
    await addAgent("ag-root0001");
    await addAgent("ag-work0001", { worktreeId: "wt-one" });
    await addAgent("ag-tick0001", { worktreeId: "wt-one" });
    await addAgent("ag-gone0001", { running: false });
    await addAgent("ag-benc0001", { running: false, suspended: true });
  });

  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
    rmSync(base, { recursive: true, force: true });
  });

  const manifestEntry = async (id: string) => findAgent(await state.store.read(root), id)?.agent;
  const ticketOwns = new OwnedWork([{ kind: "ticket", id: "TASK-0001", agentIds: ["ag-tick0001"], worktreeIds: [] }]);

  it("kill of every worktree stops their agents but leaves the one a ticket owns, naming the owner; naming its worktree is refused", async () => {
    await expect(service.kill(root, { target: "wt-one" }, ticketOwns)).rejects.toThrow("refusing to kill wt-one: it is owned by ticket TASK-0001");
    const result = await service.kill(root, { target: "worktrees" }, ticketOwns);
    expect(result.killed.map((k) => k.agentId)).toEqual(["ag-work0001"]);
    expect(result.rootAgentsLeft).toBe(1);
    expect(result.skipped).toEqual([{ agentId: "ag-tick0001", reason: expect.stringContaining("ticket TASK-0001"), owner: { kind: "ticket", id: "TASK-0001" } }]);
    expect((await manifestEntry("ag-work0001"))?.status).toBe("broken");
    expect(state.isRunning("ag-tick0001")).toBe(true);
    expect(state.isRunning("ag-root0001")).toBe(true);
  });

  it("kill all with the caller excluded; --force (no owners) takes owned work too; a named owned agent or the caller is refused", async () => {
    await expect(service.kill(root, { target: "ag-tick0001" }, ticketOwns)).rejects.toMatchObject({ code: "INVALID_STATE" });
    await expect(service.kill(root, { target: "ag-root0001", callerAgentId: "ag-root0001" }, undefined)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(service.kill(root, { target: "wt-nothere" }, undefined)).rejects.toMatchObject({ code: "WORKTREE_NOT_FOUND" });

    const result = await service.kill(root, { target: "all", callerAgentId: "ag-root0001" }, undefined);
    expect(result.killed.map((k) => k.agentId).sort()).toEqual(["ag-tick0001", "ag-work0001"]);
    expect(Object.fromEntries(result.skipped.map((s) => [s.agentId, s.reason]))).toEqual({
      "ag-root0001": "excluded",
      "ag-gone0001": "not running",
      "ag-benc0001": "suspended (not running)",
    });
  });

  it("suspend all skips the caller, the benched and the gone, and records the rest as suspended", async () => {
    const result = await service.suspend(root, { target: "all", callerAgentId: "ag-work0001" });
    expect(result.suspended.sort()).toEqual(["ag-root0001", "ag-tick0001"]);
    expect(Object.fromEntries(result.skipped.map((s) => [s.agentId, s.reason]))).toEqual({
      "ag-work0001": "calling agent",
      "ag-gone0001": "not running",
      "ag-benc0001": "already suspended",
    });
    expect(await manifestEntry("ag-root0001")).toMatchObject({ suspended: true, status: "waiting" });
    await expect(service.suspend(root, { target: "ag-gone0001" })).rejects.toThrow("ag-gone0001 cannot be suspended: not running");
    await expect(service.suspend(root, { target: "wt-one" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });

  it("kill after bench names the benched agent as suspended, not by the exit code the bench gave it", async () => {
    await service.suspend(root, { target: "ag-root0001" });
    const result = await service.kill(root, { target: "all" }, undefined);
    expect(result.skipped).toContainEqual({ agentId: "ag-root0001", reason: "suspended (not running)" });
    expect(await manifestEntry("ag-root0001")).toMatchObject({ suspended: true });
  });
});
