// A host reached through the exec transport on this machine: a second pu daemon with a PU_HOME of
// its own (the host's ROOT/home), reached by `pu daemon stdio` through a wrapper script that the
// test can make fail (the link "drops"). What a person notices when the link or a state file of
// the control plane goes wrong: agents placed there still listed, problems said in one line.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync, mkdirSync, chmodSync, rmSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { cleanupAll, daemonEnv, makeProject, makeTempHome, startTestDaemon, trackAgentPid, type TestDaemon } from "./helpers/daemon.js";
import { runGit } from "./helpers/git-repo.js";

afterEach(cleanupAll);

const here = path.dirname(fileURLToPath(import.meta.url));
const PU_CLI_BIN = path.resolve(here, "../../pu-cli/bin/pu");

interface ExecHost {
  name: string;
  root: string;
  daemon: TestDaemon;
  /** Makes the transport fail from now on and ends the bridges already open (the link drops). */
  drop(): void;
  restore(): void;
}

/** A host whose daemon runs here under ROOT/home, reached through a wrapper the test can make fail. */
async function execHost(client: Client, name: string): Promise<ExecHost> {
  const root = makeTempHome();
  mkdirSync(path.join(root, "bin"), { recursive: true });
  mkdirSync(path.join(root, "home"), { recursive: true });
  writeFileSync(path.join(root, "bin", "pu"), `#!/bin/sh\nexec "${process.execPath}" "${PU_CLI_BIN}" "$@"\n`);
  chmodSync(path.join(root, "bin", "pu"), 0o755);
  const down = path.join(root, "link-down");
  const wrapper = path.join(root, "transport");
  writeFileSync(wrapper, `#!/bin/sh\nif [ -e "${down}" ]; then echo "link down (test)" >&2; exit 255; fi\nexec "$@"\n`);
  chmodSync(wrapper, 0o755);
  // Started by the test (so stopped by it); the bridge finds it running.
  const daemon = await startTestDaemon(path.join(root, "home"));
  await client.request("host_add", { name, transport: { kind: "exec", command: [wrapper] }, root });
  return {
    name,
    root,
    daemon,
    drop() {
      writeFileSync(down, "");
      for (const pid of bridgePids(root)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
    restore() {
      rmSync(down, { force: true });
    },
  };
}

/** The `pu daemon stdio` bridges of this host (found by its PU_HOME, ROOT/home, in their environment). */
function bridgePids(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (argv.includes("stdio") && env.includes(`PU_HOME=${path.join(root, "home")}`)) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function everyAgent(report: StatusReport): Record<string, AgentView> {
  const out: Record<string, AgentView> = { ...report.agents };
  for (const wt of Object.values(report.worktrees)) Object.assign(out, wt.agents);
  return out;
}

describe("agents on an exec host while its link is down", () => {
  it("an agent placed there and never asked about since is listed as last known (host unreachable)", async () => {
    const control = await startTestDaemon();
    const client = await control.client();
    const repo = await makeProject(client);
    const host = await execHost(client, "box2");
    const first = await client.request("spawn", { projectRoot: repo.root, on: "box2", agent: "terminal", prompt: "echo b1" });
    trackAgentPid(first.agent.pid);
    // One report heard, then a second agent placed after it.
    expect(everyAgent(await client.request("status", { projectRoot: repo.root }))[first.agentId]).toBeDefined();
    const second = await client.request("spawn", { projectRoot: repo.root, on: "box2", agent: "terminal", prompt: "echo b2" });
    trackAgentPid(second.agent.pid);

    host.drop();
    const report = await client.request("status", { projectRoot: repo.root });
    const agents = everyAgent(report);
    for (const id of [first.agentId, second.agentId]) {
      expect(agents[id], `${id} listed`).toMatchObject({ host: "box2", hostState: "unreachable" });
      expect(agents[id]!.status).not.toBe("broken");
    }
    expect(agents[second.agentId]).toMatchObject({ agentType: "terminal", status: "streaming" });
  }, 60_000);
});

describe("a state file of the control plane that cannot be read", () => {
  /** A control plane with a local agent and one on an exec host, both running. */
  async function placed() {
    const control = await startTestDaemon();
    const client = await control.client();
    const repo = await makeProject(client);
    await execHost(client, "box");
    const remote = await client.request("spawn", { projectRoot: repo.root, on: "box", agent: "terminal", prompt: "echo on-box" });
    trackAgentPid(remote.agent.pid);
    const local = await client.request("spawn", { projectRoot: repo.root, root: true, agent: "terminal", prompt: "echo here" });
    trackAgentPid(local.agent.pid);
    expect(everyAgent(await client.request("status", { projectRoot: repo.root }))[remote.agentId]).toMatchObject({ hostState: "connected" });
    return { control, client, repo, remote, local };
  }

  it("a corrupt remote-projects.json is a problem line in status and host list; host remove is refused and hosts.json kept", async () => {
    const { control, repo, remote, local } = await placed();
    const placementsFile = path.join(control.home, "remote-projects.json");
    const hostsFile = path.join(control.home, "hosts.json");
    const good = readFileSync(placementsFile, "utf8");
    await control.stop();
    writeFileSync(placementsFile, "{ not json");
    const again = await startTestDaemon(control.home);
    const client = await again.client();

    const report = await client.request("status", { projectRoot: repo.root });
    expect(everyAgent(report)[local.agentId]).toBeDefined();
    expect(report.problems).toEqual([expect.stringContaining("remote-projects.json")]);
    const list = await client.request("host_list", {});
    expect(list.problems).toEqual([expect.stringContaining("remote-projects.json")]);

    const hostsBefore = readFileSync(hostsFile, "utf8");
    await expect(client.request("host_remove", { name: "box" })).rejects.toMatchObject({ code: "INVALID_STATE", message: expect.stringContaining("remote-projects.json") });
    await expect(client.request("host_remove", { name: "box", force: true })).rejects.toMatchObject({ code: "INVALID_STATE" });
    expect(readFileSync(hostsFile, "utf8")).toBe(hostsBefore);
    expect(readFileSync(placementsFile, "utf8")).toBe("{ not json");

    // Fixed by the person: read again, the host's agent is back and the problem gone.
    writeFileSync(placementsFile, good);
    const fixed = await client.request("status", { projectRoot: repo.root });
    expect(fixed.problems).toBeUndefined();
    expect(everyAgent(fixed)[remote.agentId]).toMatchObject({ host: "box", hostState: "connected" });
    await expect(client.request("host_remove", { name: "box" })).rejects.toMatchObject({ code: "INVALID_STATE", message: expect.stringContaining("1 running agent") });
  }, 60_000);

  it("a corrupt remote-projects.json: a request about an agent or worktree on a host names the file (exit 1), not \"no agent\"; this machine's agents still answer", async () => {
    const { control, repo, remote, local } = await placed();
    const placementsFile = path.join(control.home, "remote-projects.json");
    const good = readFileSync(placementsFile, "utf8");
    await control.stop();
    writeFileSync(placementsFile, "{ not json");
    const again = await startTestDaemon(control.home);
    const client = await again.client();

    const unreadable = { code: "CONFIG_ERROR", message: expect.stringMatching(/^cannot read remote-projects\.json, so pu cannot tell .*remote-projects\.json: not valid JSON/) };
    const projectRoot = repo.root;
    const id = remote.agentId;
    await expect(client.request("type_text", { agentId: id, text: "hello" })).rejects.toMatchObject(unreadable);
    await expect(client.request("input", { agentId: id, data: new Uint8Array([13]) })).rejects.toMatchObject(unreadable);
    await expect(client.request("logs", { agentId: id })).rejects.toMatchObject(unreadable);
    await expect(client.request("attach", { agentId: id })).rejects.toMatchObject(unreadable);
    await expect(client.request("resize", { agentId: id, cols: 80, rows: 24 })).rejects.toMatchObject(unreadable);
    await expect(client.request("kill", { projectRoot, target: id })).rejects.toMatchObject(unreadable);
    await expect(client.request("suspend", { projectRoot, target: id })).rejects.toMatchObject(unreadable);
    await expect(client.request("resume", { projectRoot, agentId: id })).rejects.toMatchObject(unreadable);
    await expect(client.request("rename", { projectRoot, target: id, name: "x" })).rejects.toMatchObject(unreadable);
    await expect(client.request("budget", { projectRoot, agentId: id, maxTokens: 5 })).rejects.toMatchObject(unreadable);
    await expect(client.request("diff", { projectRoot, worktreeId: remote.worktreeId! })).rejects.toMatchObject(unreadable);
    await expect(client.request("merge", { projectRoot, worktreeId: remote.worktreeId! })).rejects.toMatchObject(unreadable);
    await expect(client.request("clean", { projectRoot, worktreeId: remote.worktreeId! })).rejects.toMatchObject(unreadable);
    // This machine's own agents are not affected: the one from before (benched by the restart) and a new one.
    await expect(client.request("type_text", { agentId: local.agentId, text: "echo here" })).rejects.toMatchObject({ message: expect.stringContaining("benched") });
    const fresh = await client.request("spawn", { projectRoot, root: true, agent: "terminal", prompt: "echo fresh" });
    trackAgentPid(fresh.agent.pid);
    expect((await client.request("type_text", { agentId: fresh.agentId, text: "echo still-here" })).bytes).toBeGreaterThan(0);

    // Through the real CLI: one line naming the file and what is wrong, exit 1 (a failure, not "not found").
    const cli = spawnSync(process.execPath, [PU_CLI_BIN, "send", id, "hello"], { cwd: repo.root, env: daemonEnv(control.home), encoding: "utf8" });
    expect(cli.stderr.trimEnd().split("\n")).toEqual([expect.stringContaining(`${placementsFile}: not valid JSON`)]);
    expect(cli.stderr).not.toMatch(/no agent/);
    expect(cli.status).toBe(1);
    expect(readFileSync(placementsFile, "utf8")).toBe("{ not json");

    // Fixed by the person: the next request reads it again and reaches the host.
    writeFileSync(placementsFile, good);
    expect((await client.request("type_text", { agentId: id, text: "echo reached" })).bytes).toBeGreaterThan(0);
  }, 60_000);

  it("a corrupt remote-projects.json: kill / bench --all, diff and clean --all act on this machine and say in one line that hosts were not included (exit 1)", async () => {
    const { control, repo, remote } = await placed();
    const placementsFile = path.join(control.home, "remote-projects.json");
    const good = readFileSync(placementsFile, "utf8");
    await control.stop();
    writeFileSync(placementsFile, "{ not json");
    const again = await startTestDaemon(control.home);
    const client = await again.client();
    const pu = (...args: string[]) => spawnSync(process.execPath, [PU_CLI_BIN, ...args], { cwd: repo.root, env: daemonEnv(control.home), encoding: "utf8" });
    const oneProblem = (stderr: string, what: RegExp) => {
      const lines = stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(what);
      expect(lines[0]).toContain(`${placementsFile}: not valid JSON`);
    };

    const fresh = await client.request("spawn", { projectRoot: repo.root, agent: "terminal", prompt: "echo fresh" });
    trackAgentPid(fresh.agent.pid);
    const diff = pu("diff", "--stat");
    expect(diff.stdout).toContain(fresh.worktreeId!);
    oneProblem(diff.stderr, /worktrees on hosts were not diffed/);
    expect(diff.status).toBe(1);
    const diffJson = pu("diff", "--json");
    expect(JSON.parse(diffJson.stdout).problems).toEqual([expect.stringContaining(placementsFile)]);
    expect(diffJson.status).toBe(1);

    const bench = pu("bench", "--all");
    expect(bench.stdout).toContain(`benched ${fresh.agentId}`);
    oneProblem(bench.stderr, /agents on hosts were not benched/);
    expect(bench.status).toBe(1);

    const kill = pu("kill", "--all", "--include-root", "--json");
    const killed = JSON.parse(kill.stdout);
    expect(killed.killed.map((k: { agentId: string }) => k.agentId)).not.toContain(remote.agentId);
    expect(killed.problems).toEqual([expect.stringMatching(/agents on hosts were not killed.*remote-projects\.json: not valid JSON/)]);
    expect(kill.status).toBe(1);
    oneProblem(pu("kill", "--all").stderr, /agents on hosts were not killed/);

    const clean = pu("clean", "--all");
    expect(clean.stdout).toContain(`cleaned ${fresh.worktreeId}`);
    oneProblem(clean.stderr, /worktrees on hosts were not cleaned/);
    expect(clean.status).toBe(1);
    expect(readFileSync(placementsFile, "utf8")).toBe("{ not json");

    // Fixed by the person: the same commands reach the host, and say nothing more.
    writeFileSync(placementsFile, good);
    const benched = pu("bench", "--all", "--json");
    expect(benched.status).toBe(0);
    expect(JSON.parse(benched.stdout)).toMatchObject({ suspended: [remote.agentId] });
    expect(JSON.parse(benched.stdout)).not.toHaveProperty("problems");
    const fixed = pu("kill", "--all", "--include-root", "--json");
    expect(fixed.status).toBe(0);
    expect(JSON.parse(fixed.stdout)).not.toHaveProperty("problems");
    // Benched above, so the host answers that it is not running: it was asked.
    expect(JSON.parse(fixed.stdout).skipped.map((k: { agentId: string }) => k.agentId)).toContain(remote.agentId);
  }, 90_000);

  it("placements naming a host hosts.json no longer has: status shows its agents as last known with one problem line", async () => {
    const { control, client, repo, remote, local } = await placed();
    writeFileSync(path.join(control.home, "hosts.json"), `${JSON.stringify({ version: 1, hosts: [] })}\n`);
    const report = await client.request("status", { projectRoot: repo.root });
    const agents = everyAgent(report);
    expect(agents[local.agentId]).toBeDefined();
    expect(agents[remote.agentId]).toMatchObject({ host: "box", hostState: "unreachable" });
    expect(report.problems).toEqual([expect.stringContaining("no host named box")]);
  }, 60_000);

  it("a corrupt hosts.json: status lists this machine's agents and the hosts' as last known, one problem line naming hosts.json", async () => {
    const { control, client, repo, remote, local } = await placed();
    writeFileSync(path.join(control.home, "hosts.json"), "{ not json");
    const report = await client.request("status", { projectRoot: repo.root });
    const agents = everyAgent(report);
    expect(agents[local.agentId]).toBeDefined();
    expect(agents[remote.agentId]).toMatchObject({ host: "box", hostState: "unreachable" });
    expect(agents[remote.agentId]!.status).not.toBe("broken");
    expect(report.problems).toEqual([expect.stringContaining("hosts.json")]);
    expect(readFileSync(path.join(control.home, "hosts.json"), "utf8")).toBe("{ not json");
  }, 60_000);
});

describe("worktree names on a host and here", () => {
  it("a host worktree named like one here gets a name free here, so its work comes back and merges", async () => {
    const control = await startTestDaemon();
    const client = await control.client();
    const repo = await makeProject(client);
    await execHost(client, "box");
    const here = await client.request("spawn", { projectRoot: repo.root, agent: "terminal", name: "collide" });
    trackAgentPid(here.agent.pid);
    expect(here.branch).toBe("pu/collide");
    const there = await client.request("spawn", { projectRoot: repo.root, on: "box", agent: "terminal", name: "collide", prompt: "git commit --allow-empty -qm from-the-host" });
    trackAgentPid(there.agent.pid);
    // Before, both were pu/collide: fetching the host's back into a branch checked out here failed,
    // so it could be neither merged nor cleaned.
    expect(there.branch).toBe("pu/collide-2");
    const hostPath = there.worktreePath ?? "";
    const deadline = Date.now() + 20_000;
    while (runGit(hostPath, ["log", "-1", "--format=%s"]) !== "from-the-host") {
      if (Date.now() > deadline) throw new Error("the host agent never committed");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await client.request("merge", { projectRoot: repo.root, worktreeId: there.worktreeId ?? "", strategy: "merge" });
    expect(runGit(repo.root, ["log", "--format=%s", "-5"]).split("\n")).toContain("from-the-host");
  }, 60_000);
});
