// Agents on a host (issue 23), end to end through a real OpenSSH server and a second local user
// standing in for another machine: `pu spawn --on HOST` pushes the project's base to a mirror on
// the host with git's own protocol over ssh, the host's daemon runs the agent there as that user,
// and this machine's daemon — the control plane — routes status, send, logs, attach, diff, merge,
// clean and kill by id. Faults: a dropped link (the agent keeps running; the host reads
// unreachable, its agents last known, never broken; reconnect), a SIGKILLed control plane.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { hostMirrorPath } from "@pu/core/hosts-file";
import { LockedFile } from "@pu/core/locked-file";
import { connectClient } from "@pu/ipc/client";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { allAgents, PuSandbox, REPO_ROOT, type StatusJson } from "../helpers/pu-sandbox.js";
import { sshdMissing, startSshHost, type SshHost } from "../helpers/sshd.js";
import { podmanMissing, startContainer } from "../helpers/container.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";
import { chromiumPath, startWeb } from "../helpers/web.js";
import { packAll } from "../install/packed.js";
import { startModelServer } from "../model-server/server.js";
import { agentHome } from "../real-agents/homes.js";

const missing = sshdMissing();
if (missing && process.env.CI) throw new Error(missing);
if (missing) console.warn(`host-agents.test.ts skipped: ${missing}`);
// CI installs podman and runc: there a missing one fails the container test alone (not the file).
const noContainer = process.env.CI ? undefined : podmanMissing();
if (noContainer) console.warn(`host-agents.test.ts: the podman container test skipped: ${noContainer}`);

/** Something accepts connections on 127.0.0.1:port (here: the far end of an ssh -R forward). */
const listening = (port: number) =>
  new Promise<boolean | undefined>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(undefined));
  });

/** What the test reads of the host daemon's manifest. */
type ManifestJson = { worktrees?: Record<string, { name: string; agents: Record<string, unknown> }> };

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

interface RemoteAgentJson {
  id: string;
  pid?: number;
  status: string;
  live: boolean;
  host?: string;
  hostState?: string;
  exitCode?: number | null;
}

/** A scripted agent: commits a file in its worktree, then echoes what it is sent. */
/** The scripted group member (tests/fixtures/group-member.mjs): readable by the host's user too. */
const GROUP_MEMBER = path.join(REPO_ROOT, "tests/fixtures/group-member.mjs");
/** The scripted plan role (tests/fixtures/plan-role.mjs): every role of a plan session. */
const PLAN_ROLE = path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs");

interface HostGroupJson {
  groupId: string;
  phase: string;
  members: { variant: string; state: string; host: string | null; agentId: string | null; worktreeId: string | null; worktreePath: string | null; output: string | null; outputSource: string | null; diff: unknown }[];
}
interface StateWithGroups {
  multi_agent_groups: {
    group_id: string;
    members: Record<string, { host?: string | null; host_group_id?: string | null; agent_id?: string | null; started_at: string }>;
    individual_outputs: Record<string, { finished_at: string }>;
  }[];
}

const AGENT_SCRIPT =
  'echo remote-work > remote.txt && git add remote.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "work done on the host" && stty raw -echo; echo "ready on $(id -un) hostile=$HOSTILE"; exec cat';

describe.skipIf(missing !== undefined)("agents on a host: spawn --on, routing by id, merge back, faults", { timeout: 180_000 }, () => {
  let host: SshHost;
  let sb: PuSandbox;
  let root: string;
  let agentId: string;
  let worktreeId: string;
  let sshConfig: string;

  const remoteAgent = async (id: string): Promise<RemoteAgentJson> => {
    const found = allAgents(await sb.status()).find((a) => a.id === id) as RemoteAgentJson | undefined;
    if (!found) throw new Error(`agent ${id} is not in pu status`);
    return found;
  };

  /**
   * A custom agent type committed in the project's .pu/config.yaml (so the host's mirror has it
   * too). Already there as it is (a test's retry), nothing is added.
   */
  const commitAgentType = (name: string, command: string) => {
    const config = path.join(sb.root, ".pu", "config.yaml");
    const before = readFileSync(config, "utf8");
    const definition = `  ${name}:\n    command: ${command}\n`;
    if (before.includes(definition)) return;
    writeFileSync(config, `${before}${/^agents:/m.test(before) ? "" : "\nagents:\n"}${definition}`);
    sb.git(["add", "-f", ".pu/config.yaml"]);
    sb.git(["commit", "-q", "-m", `the agent type ${name}`]);
  };
  /** The project's `.pu/config.yaml` as it is now, and a commit of new text in its place. */
  const projectConfig = () => {
    const file = path.join(sb.root, ".pu", "config.yaml");
    const before = readFileSync(file, "utf8");
    const commitConfig = (text: string, message: string) => {
      // The same text again (a test's retry) is no change to commit.
      if (readFileSync(file, "utf8") === text) return;
      writeFileSync(file, text);
      sb.git(["add", "-f", ".pu/config.yaml"]);
      sb.git(["commit", "-q", "-m", message]);
    };
    return { before, commitConfig };
  };
  /** Files written into the project and committed (force-added: `.pu/` is ignored), as a pull would bring them. */
  const commitFiles = (files: Record<string, string>, message: string) => {
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
      sb.git(["add", "-f", file]);
    }
    sb.git(["commit", "-q", "-m", message]);
  };
  /** A scripted agent type committed with its scenario: a file the host's user can read, removed after the test. */
  const scriptedAgentType = (name: string, fixture: string, scenario: unknown) => {
    const file = path.join(os.tmpdir(), `pu-e2e-${name}-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(scenario), { mode: 0o644 });
    onTestFinished(() => rmSync(file, { force: true }));
    const variable = fixture === PLAN_ROLE ? "PLAN_TEST_SCENARIO" : "GROUP_TEST_SCENARIO";
    commitAgentType(name, `env ${variable}=${file} ${process.execPath} ${fixture}`);
  };
  const promptFiles = (names: string[]): string[] =>
    names.flatMap((name) => {
      const file = path.join(sb.base, `${name}.md`);
      writeFileSync(file, `approach ${name}\n`);
      return ["--prompt-file", file];
    });

  const controlArgs = () => ["-F", host.configFile, "-o", `ControlPath=${path.join(sb.home, "ssh", "box")}`];
  /** The pid of the shared ssh connection's master, from `ssh -O check`. */
  const sharedMasterPid = (): number => {
    const said = execFileSync("sh", ["-c", 'ssh "$@" -O check 2>&1 || true', "sh", ...controlArgs(), host.alias], { encoding: "utf8" });
    const pid = Number(/pid=(\d+)/.exec(said)?.[1] ?? 0);
    // Never 0 or less: kill(0) would signal this test's own process group.
    if (!(pid > 1)) throw new Error(`no shared ssh master: ${said.trim()}`);
    return pid;
  };
  /** The daemon's own ssh processes (its links, each riding the shared master): killed as a dropped link would end them. */
  const killDaemonSshClients = () => {
    const daemonPid = sb.noteDaemonPid()!;
    const pids = execFileSync("sh", ["-c", 'pgrep -P "$1" -x ssh || true', "sh", String(daemonPid)], { encoding: "utf8" }).split("\n").filter(Boolean).map(Number);
    for (const pid of pids) if (pid > 1) process.kill(pid, "SIGKILL");
    return pids.length;
  };

  beforeAll(async () => {
    host = await startSshHost();
    root = `${host.home}/pu-root`;
    sb = new PuSandbox("pu-e2e-host-agents-");
    sshConfig = readFileSync(host.configFile, "utf8");
    await sb.ok(["host", "add", "box", "--ssh", host.alias, "--ssh-config", host.configFile, "--root", root]);
    const packed = mkdtempSync(path.join(os.tmpdir(), "pu-e2e-host-agents-packed-"));
    await packAll(packed);
    const installed = await sb.pu(["host", "install", "box", "--packed", packed], { timeoutMs: 600_000 });
    rmSync(packed, { recursive: true, force: true });
    if (installed.code !== 0) throw new Error(`pu host install: ${installed.stderr}`);
    await sb.ok(["init"]);
    // An env file (not in git): sent along with each agent placed on a host.
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(config, readFileSync(config, "utf8").replace("envFiles: []", "envFiles:\n  - .env"));
    writeFileSync(path.join(sb.root, ".env"), "SECRET=from-this-machine\n");
  }, 600_000);
  afterAll(async () => {
    const leftovers = await sb?.teardown();
    await host?.stop();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("spawn --on runs the agent on the host, as its user, in a worktree of the project's mirror; status shows it with a HOST column", async () => {
    const hostileFile = `${host.home}/pu-owned`;
    const spawned = await sb.puJson<{ agentId: string; worktreeId: string; host: string; cwd: string; agent: { pid: number } }>([
      "spawn", "--on", "box", "--name", "remote-fix", "--command", AGENT_SCRIPT, "--env", `HOSTILE=$(touch ${hostileFile});'"\`id\``,
    ]);
    agentId = spawned.agentId;
    worktreeId = spawned.worktreeId;
    expect(spawned.host).toBe("box");
    expect(spawned.cwd.startsWith(`${root}/projects/`)).toBe(true);
    expect(uidOf(spawned.agent.pid)).toBe(host.uid);
    await sb.waitForLogs(agentId, /ready on puhost\S+ hostile=\$\(touch/);
    expect(existsSync(hostileFile), "an env value ran as a command on the host").toBe(false);
    // The project's env file was written into the host's worktree (0600, as the host's user).
    expect(readFileSync(path.join(spawned.cwd, ".env"), "utf8")).toBe("SECRET=from-this-machine\n");
    expect(statSync(path.join(spawned.cwd, ".env")).uid).toBe(host.uid);

    const agent = await remoteAgent(agentId);
    expect(agent).toMatchObject({ host: "box", hostState: "connected", live: true });
    const table = await sb.ok(["status"]);
    expect(table).toMatch(/\bHOST\b/);
    expect(table).toMatch(new RegExp(`${agentId}.*\\bbox\\b`));
    const hosts = await sb.puJson<{ hosts: { name: string; link: { state: string; agents: number } }[] }>(["host", "list"]);
    expect(hosts.hosts[0]!.link).toMatchObject({ state: "connected", agents: 1 });
  });

  it("bad placements are one line and the documented exit code: an unknown host (3), a detached HEAD (1); trust --on before any agent makes the mirror it reviews", async () => {
    const unknown = await sb.pu(["spawn", "--on", "nosuch", "--root", "--command", "true"]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toMatch(/no host named nosuch \(pu host list\)/);
    const head = sb.git(["rev-parse", "HEAD"]).trim();
    sb.git(["checkout", "-q", "--detach", head]);
    try {
      const detached = await sb.pu(["spawn", "--on", "box", "--root", "--command", "true"]);
      expect(detached.code).toBe(1);
      expect(detached.stderr.trim().split("\n")).toHaveLength(1);
      expect(detached.stderr).toMatch(/detached HEAD; check out a branch \(or pass --base\)/);
    } finally {
      sb.git(["checkout", "-q", "main"]);
    }
    // A root with the installed pu and nothing placed there yet (its own home, so its own daemon).
    const emptyRoot = `${host.home}/empty-root`;
    execFileSync("runuser", ["-u", host.user, "--", "sh", "-c", 'mkdir -p "$1/bin" && ln -s "$2/bin/pu" "$1/bin/pu"', "sh", emptyRoot, root]);
    await sb.ok(["host", "add", "empty-box", "--exec", `runuser -u ${host.user} --`, "--root", emptyRoot]);
    // Nothing placed there yet: the branch is pushed to a new mirror, and what its .pu/ would run is shown.
    const mirror = hostMirrorPath({ root: emptyRoot }, sb.root);
    expect(existsSync(mirror)).toBe(false);
    await sb.ok(["trust", "--on", "empty-box", "--show"]);
    expect(execFileSync("git", ["-c", "safe.directory=*", "-C", mirror, "rev-parse", "main"], { encoding: "utf8" }).trim()).toBe(sb.git(["rev-parse", "main"]).trim());
    await sb.ok(["host", "remove", "empty-box"]);
  });

  it("files sent with a spawn land inside the new worktree only: a path above it or into .git is refused and nothing is left", async () => {
    const client = await connectClient({ socketPath: path.join(sb.home, "daemon.sock"), clientName: "pu-test-files" });
    try {
      for (const bad of ["../escaped", "/tmp/escaped", ".git/hooks/post-checkout", "a/../../escaped"]) {
        await expect(client.request("spawn", { projectRoot: sb.root, name: "files-refused", command: "true", files: [{ path: bad, data: Buffer.from("x") }] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      }
      expect(existsSync(path.join(sb.root, ".pu", "worktrees", "escaped"))).toBe(false);
      expect(existsSync(path.join(sb.root, ".pu", "escaped"))).toBe(false);
      const report = await sb.status();
      expect(Object.values(report.worktrees).map((w) => (w as { name: string }).name)).not.toContain("files-refused");
    } finally {
      client.close();
    }
  });

  it("agents placed on a host at the same moment each get their worktree: the pushes into its mirror take turns", async () => {
    // A new commit, so that every spawn's push has the mirror's branch to move.
    writeFileSync(path.join(sb.root, "together.txt"), "pushed by four spawns at once\n");
    sb.git(["add", "together.txt"]);
    sb.git(["commit", "-q", "-m", "a commit four spawns push at once"]);
    const spawns = await Promise.all(
      [1, 2, 3, 4].map((n) => sb.pu(["spawn", "--on", "box", "--name", `together-${n}`, "--command", "echo together-ready; exec cat", "--json"])),
    );
    const placed = spawns.flatMap((run) => (run.code === 0 ? [JSON.parse(run.stdout) as { agentId: string; worktreeId: string; cwd: string }] : []));
    try {
      expect(spawns.map((run) => [run.code, run.stderr.trim()])).toEqual(spawns.map(() => [0, ""]));
      for (const agent of placed) expect(readFileSync(path.join(agent.cwd, "together.txt"), "utf8")).toBe("pushed by four spawns at once\n");
    } finally {
      for (const agent of placed) await sb.pu(["clean", "--worktree", agent.worktreeId, "--force"]);
    }
    const report = await sb.status();
    const names = [...Object.values(report.agents), ...Object.values(report.worktrees).flatMap((w) => Object.values(w.agents))].map((a) => a.name);
    expect(names.filter((name) => name.startsWith("together-"))).toEqual([]);
  });

  it("send, logs and attach reach the remote agent by its id alone", async () => {
    await sb.ok(["send", agentId, "typed-from-the-control-plane"]);
    await sb.waitForLogs(agentId, "typed-from-the-control-plane");
    const client = await connectClient({ socketPath: path.join(sb.home, "daemon.sock"), clientName: "pu-test-viewer" });
    try {
      const stream = await client.openStream("attach", { agentId });
      let seen = "";
      const reading = (async () => {
        for await (const event of stream) if (event.type === "output") seen += Buffer.from(event.data).toString("utf8");
      })();
      await waitFor("the replay through the control plane", async () => (seen.includes("typed-from-the-control-plane") ? true : undefined), 30_000, 50);
      await stream.request("input", { agentId, data: Buffer.from("keys-while-attached") });
      await waitFor("the echo of keys typed while attached", async () => (seen.includes("keys-while-attached") ? true : undefined), 30_000, 50);
      stream.close();
      await reading;
    } finally {
      client.close();
    }
  });

  it("pu web lists the host's agents as on that host and spawns on a host from its form", async () => {
    const browserFound = chromiumPath();
    if (!browserFound.path) throw new Error(browserFound.missing);
    const browser = await chromium.launch({ executablePath: browserFound.path, args: ["--no-sandbox"] });
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      const { url } = await startWeb(sb);
      await page.goto(url);
      await page.locator('#connection[data-connected="true"]').waitFor();
      await expect.poll(() => page.locator(`[data-agent-id="${agentId}"]`).innerText(), { timeout: 30_000 }).toMatch(/on box/);
      await page.locator("details.spawn summary").click();
      await expect.poll(() => page.locator('select[name="on"] option').allInnerTexts(), { timeout: 30_000 }).toContain("on box");
      await page.selectOption('select[name="agent"]', "terminal");
      await page.selectOption('select[name="where"]', "root");
      await page.selectOption('select[name="on"]', "box");
      const before = new Set(allAgents(await sb.status()).map((a) => a.id));
      await page.locator('[data-action="spawn"]').click();
      const spawnedId = await waitFor("the page's spawn on the host", async () => {
        const found = allAgents(await sb.status()).find((a) => !before.has(a.id) && (a as RemoteAgentJson).host === "box");
        return found?.id;
      }, 60_000, 250);
      await expect.poll(() => page.locator(`[data-agent-id="${spawnedId}"]`).innerText(), { timeout: 30_000 }).toMatch(/on box/);
      const pid = (await remoteAgent(spawnedId)).pid!;
      expect(uidOf(pid)).toBe(host.uid);
      await sb.ok(["kill", spawnedId]);
      await waitFor("the page's agent to end", async () => (isProcessAlive(pid) ? undefined : true), 30_000, 100);
    } finally {
      await browser.close();
      await sb.ok(["web", "stop"]);
    }
  });

  it("diff shows the remote worktree's commit; merge fetches the branch back and merges it into the local base", async () => {
    const diff = await sb.puJson<{ worktrees: { worktreeId: string; files: { path: string }[] }[] }>(["diff", "--worktree", worktreeId]);
    expect(diff.worktrees[0]!.files.map((f) => f.path)).toEqual(["remote.txt"]);
    // `pu diff` of every worktree includes the host's.
    const all = await sb.puJson<{ worktrees: { worktreeId: string }[] }>(["diff", "--stat"]);
    expect(all.worktrees.map((w) => w.worktreeId)).toContain(worktreeId);
    // Not merged yet: clean refuses in one line (exit 1), naming the commit the local base lacks.
    const refused = await sb.pu(["clean", "--worktree", worktreeId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/on host box: 1 commit\(s\) main lacks/);

    const merged = await sb.puJson<{ status: string; commit: string }>(["merge", worktreeId]);
    expect(merged.status).toBe("merged");
    expect(readFileSync(path.join(sb.root, "remote.txt"), "utf8")).toBe("remote-work\n");
    expect(sb.git(["log", "--format=%s", "main"])).toContain("work done on the host");
    const report = (await sb.status()) as StatusJson;
    expect((report.worktrees[worktreeId] as { status: string }).status).toBe("merged");
  });

  it("a dropped link leaves the agent running; the host reads unreachable and its agent last known (never broken); the link comes back", async () => {
    const before = await remoteAgent(agentId);
    // The link down: the shared ssh connection's master gone, the daemon's ssh clients killed, new connections refused.
    expect(sharedMasterPid(), "pu shares one ssh connection per host, its socket under PU_HOME").toBeGreaterThan(1);
    execFileSync("ssh", [...controlArgs(), "-O", "exit", host.alias], { stdio: "ignore" });
    writeFileSync(host.configFile, sshConfig.replace(/Port \d+/, "Port 1"));
    killDaemonSshClients();
    expect(isProcessAlive(before.pid!), JSON.stringify(before)).toBe(true);

    const lastKnown = await waitFor("the host to read unreachable", async () => {
      const agent = await remoteAgent(agentId);
      return agent.hostState === "unreachable" ? agent : undefined;
    }, 60_000, 250);
    expect(lastKnown.status).toBe(before.status);
    expect(lastKnown.status).not.toBe("broken");
    expect(await sb.ok(["status"])).toMatch(/host unreachable/);
    const hosts = await sb.puJson<{ hosts: { link: { state: string; reason: string } }[] }>(["host", "list"]);
    expect(hosts.hosts[0]!.link.state).toBe("unreachable");
    const send = await sb.pu(["send", agentId, "lost"]);
    expect(send.code).toBe(4);
    expect(send.stderr.trim().split("\n")).toHaveLength(1);

    writeFileSync(host.configFile, sshConfig);
    const back = await waitFor("the link to come back", async () => {
      const agent = await remoteAgent(agentId);
      return agent.hostState === "connected" ? agent : undefined;
    }, 60_000, 500);
    expect(back.live).toBe(true);
    expect(back.pid).toBe(before.pid);
  });

  it("a host that accepts the connection and never answers reads unreachable within a bounded time; pu status never hangs", async () => {
    // A listener that takes the TCP connection and says nothing (ssh waits for a banner that never comes).
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      execFileSync("ssh", [...controlArgs(), "-O", "exit", host.alias], { stdio: "ignore" });
      writeFileSync(host.configFile, sshConfig.replace(/Port \d+/, `Port ${port}`));
      killDaemonSshClients();
      const started = Date.now();
      const run = await sb.pu(["status", "--json"]);
      const seconds = (Date.now() - started) / 1000;
      expect(run.code, run.stderr).toBe(0);
      expect(seconds, "pu status waited this long on a silent host").toBeLessThan(20);
      const agent = allAgents(JSON.parse(run.stdout) as StatusJson).find((a) => a.id === agentId) as RemoteAgentJson;
      expect(agent).toMatchObject({ host: "box", hostState: "unreachable" });
      // Keys to it fail in one line naming the host, inside the CLI's own wait.
      const send = await sb.pu(["send", agentId, "into-the-void"]);
      expect(send.code).toBe(4);
      expect(send.stderr.trim().split("\n")).toHaveLength(1);
      expect(send.stderr).toMatch(/host box/);
    } finally {
      writeFileSync(host.configFile, sshConfig);
      silent.close();
    }
    await waitFor("the link to come back", async () => ((await remoteAgent(agentId)).hostState === "connected" ? true : undefined), 60_000, 500);
  });

  it("a shared ssh master that hangs (the stale-socket hang) is detected and replaced; the link comes back", async () => {
    const master = sharedMasterPid();
    process.kill(master, "SIGSTOP");
    try {
      expect(killDaemonSshClients(), "the daemon's links riding the master").toBeGreaterThan(0);
      const back = await waitFor("the link through a fresh master", async () => {
        const agent = await remoteAgent(agentId);
        return agent.hostState === "connected" ? agent : undefined;
      }, 60_000, 500);
      expect(back.live).toBe(true);
      expect(sharedMasterPid()).not.toBe(master);
      expect(readFileSync(path.join(sb.home, "daemon.log"), "utf8")).toMatch(/ssh_control_stale/);
    } finally {
      process.kill(master, "SIGKILL");
    }
  });

  it("a SIGKILLed control plane finds its remote agents again on restart", async () => {
    await sb.sigkillDaemon();
    const agent = await remoteAgent(agentId);
    expect(agent).toMatchObject({ host: "box", hostState: "connected", live: true });
    await sb.ok(["send", agentId, "after-the-restart"]);
    await sb.waitForLogs(agentId, "after-the-restart");
  });

  it("a control plane SIGKILLed after the host started an agent, before it recorded the answer, adopts that agent on restart", async () => {
    const recordFile = path.join(sb.home, "remote-projects.json");
    const hostManifest = path.join(hostMirrorPath({ root }, sb.root), ".pu", "manifest.json");
    const spawning = sb.pu(["spawn", "--on", "box", "--name", "unrecorded", "--command", "stty raw -echo; echo unrecorded-ready; exec cat"]);
    // The ask is written first; then the record is held (as a stalled disk would hold it), so
    // the host's answer cannot be written before the daemon dies.
    await waitFor("the spawn written as asked", () => (/"spawning":\["/.test(readFileSync(recordFile, "utf8")) ? true : undefined), 60_000, 5);
    const lock = LockedFile.lockPath(recordFile);
    // Taken as soon as the daemon's own write of the moment (a status report kept) lets go.
    await waitFor("the record's lock", () => {
      try {
        mkdirSync(lock);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
        throw error;
      }
    }, 10_000, 2);
    const keepFresh = setInterval(() => utimesSync(lock, new Date(), new Date()), 1000);
    let orphanId: string;
    try {
      // The spawn's worktree carries the name; its agent is the one the host started.
      orphanId = await waitFor("the agent started on the host", () => {
        const manifest = existsSync(hostManifest) ? (JSON.parse(readFileSync(hostManifest, "utf8")) as ManifestJson) : { worktrees: {} };
        const worktree = Object.values(manifest.worktrees ?? {}).find((wt) => wt.name === "unrecorded");
        return worktree ? Object.keys(worktree.agents)[0] : undefined;
      }, 60_000, 20);
      expect(readFileSync(recordFile, "utf8")).not.toContain(orphanId);
      await sb.sigkillDaemon();
    } finally {
      clearInterval(keepFresh);
      rmSync(lock, { recursive: true, force: true });
    }
    expect((await spawning).code).not.toBe(0);
    // The next daemon asks the host and routes the agent it started by its id, as any other.
    const adopted = await waitFor("the unrecorded agent routed again", async () => {
      const found = allAgents(await sb.status()).find((a) => a.id === orphanId) as RemoteAgentJson | undefined;
      return found?.live ? found : undefined;
    }, 30_000, 250);
    expect(adopted).toMatchObject({ host: "box", hostState: "connected" });
    await sb.waitForLogs(orphanId, "unrecorded-ready");
    expect(JSON.parse(readFileSync(recordFile, "utf8")).projects.every((p: { spawning: string[] }) => p.spawning.length === 0)).toBe(true);
    // Gone again, so the tests after this one count only their own agents.
    const worktree = Object.values((await sb.status()).worktrees).find((wt) => orphanId in wt.agents);
    await sb.ok(["clean", "--worktree", worktree!.id, "--force"]);
  });

  it("a committed .pu/ that runs a command runs on the host only once trusted there (pu trust --on)", async () => {
    const config = path.join(sb.root, ".pu", "config.yaml");
    const before = readFileSync(config, "utf8");
    writeFileSync(config, `${before}\nagents:\n  hostbot:\n    command: "sh -c 'stty raw -echo; echo hostbot-ran; exec cat'"\n    interactive: true\n`);
    sb.git(["add", "-f", ".pu/config.yaml"]);
    sb.git(["commit", "-q", "-m", "a custom agent type"]);
    const refused = await sb.pu(["spawn", "--on", "box", "--agent", "hostbot", "--root"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/on host box: not trusted yet: .*hostbot.*pu trust --on box --show/);
    const shown = await sb.ok(["trust", "--on", "box", "--show"]);
    expect(shown).toMatch(/NOT TRUSTED .*hostbot-ran/);
    await sb.ok(["trust", "--on", "box"]);
    const spawned = await sb.puJson<{ agentId: string; agent: { pid: number } }>(["spawn", "--on", "box", "--agent", "hostbot", "--root"]);
    await sb.waitForLogs(spawned.agentId, "hostbot-ran");
    // Trusting the host's copy trusted nothing here.
    expect(await sb.ok(["trust", "--show"])).toMatch(/NOT TRUSTED .*hostbot-ran/);
    await sb.ok(["kill", spawned.agentId]);
    await waitFor("hostbot to end", async () => (isProcessAlive(spawned.agent.pid) ? undefined : true), 30_000, 100);
  });

  it("through exec (runuser: argv, no shell, the path podman exec -i and kubectl exec -i take) an agent is placed and reached the same way", async () => {
    await sb.ok(["host", "add", "box-exec", "--exec", `runuser -u ${host.user} --`, "--root", root, "--max-agents", "1"]);
    const spawned = await sb.puJson<{ agentId: string; host: string; agent: { pid: number } }>(["spawn", "--on", "box-exec", "--root", "--name", "exec-agent", "--command", "stty raw -echo; echo exec-ready; exec cat"]);
    expect(spawned.host).toBe("box-exec");
    expect(uidOf(spawned.agent.pid)).toBe(host.uid);
    await sb.waitForLogs(spawned.agentId, "exec-ready");
    // Its cap is one agent: a second is refused in one line, nothing started.
    const capped = await sb.pu(["spawn", "--on", "box-exec", "--root", "--command", "true"]);
    expect(capped.code).toBe(1);
    expect(capped.stderr.trim().split("\n")).toHaveLength(1);
    expect(capped.stderr).toMatch(/runs 1 agent\(s\) pu placed there, its cap \(--max-agents 1\)/);
    await sb.ok(["send", spawned.agentId, "through-exec"]);
    await sb.waitForLogs(spawned.agentId, "through-exec");
    expect(await remoteAgent(spawned.agentId)).toMatchObject({ host: "box-exec", hostState: "connected" });
    // bench and play, routed to the host: the agent is stopped there and started again as it was.
    await sb.ok(["bench", spawned.agentId]);
    await waitFor("the exec agent to be benched", async () => (isProcessAlive(spawned.agent.pid) ? undefined : true), 30_000, 100);
    expect(await sb.ok(["status"])).toMatch(new RegExp(`${spawned.agentId}.*box-exec.*benched`));
    await sb.ok(["play", spawned.agentId]);
    const played = await waitFor("the exec agent to run again", async () => {
      const agent = await remoteAgent(spawned.agentId);
      return agent.live && agent.pid !== spawned.agent.pid ? agent : undefined;
    }, 30_000, 250);
    expect(uidOf(played.pid!)).toBe(host.uid);
    await sb.ok(["kill", spawned.agentId]);
    await waitFor("the exec agent to end", async () => (isProcessAlive(played.pid!) ? undefined : true), 30_000, 100);
    // Nothing left running there: removing it needs no --force.
    await sb.ok(["host", "remove", "box-exec"]);
  });

  it.skipIf(noContainer !== undefined)("a podman container as a host through exec (podman exec -i): checked, an agent placed in it, reached by id, its worktree merged here, removed", async () => {
    const missingHere = podmanMissing();
    if (missingHere) throw new Error(missingHere);
    const ctrRoot = mkdtempSync(path.join(os.tmpdir(), "pu-e2e-ctr-"));
    const container = startContainer(`pu-e2e-ctr-${process.pid}`, ctrRoot);
    onTestFinished(() => {
      container.stop();
      rmSync(ctrRoot, { recursive: true, force: true });
    });
    // The container's root is this machine's (an overlay): it runs the pu installed for the ssh host.
    mkdirSync(path.join(ctrRoot, "bin"));
    symlinkSync(`${root}/bin/pu`, path.join(ctrRoot, "bin", "pu"));
    await sb.ok(["host", "add", "ctr", "--exec", container.exec, "--root", ctrRoot]);
    const checked = await sb.pu(["host", "check", "ctr"]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/daemon pid \d+, pu \S+, protocol 1/);

    const script = 'echo made-in-the-container > container.txt && git add container.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "work done in the container" && stty raw -echo; echo "ready in $(cat /proc/1/cmdline | tr "\\0" " ")"; exec cat';
    const spawned = await sb.puJson<{ agentId: string; worktreeId: string; cwd: string; host: string }>(["spawn", "--on", "ctr", "--name", "ctr-agent", "--command", script]);
    expect(spawned.host).toBe("ctr");
    // Its pid 1 is the container's `sleep infinity`: the agent runs inside it.
    await sb.waitForLogs(spawned.agentId, "ready in sleep infinity");
    expect(spawned.cwd.startsWith(`${ctrRoot}/projects/`)).toBe(true);
    await sb.ok(["send", spawned.agentId, "through-podman"]);
    await sb.waitForLogs(spawned.agentId, "through-podman");
    expect(await remoteAgent(spawned.agentId)).toMatchObject({ host: "ctr", hostState: "connected", live: true });
    // Merged here: the branch fetched back from the container through podman exec.
    const merged = await sb.puJson<{ status: string }>(["merge", spawned.worktreeId]);
    expect(merged.status).toBe("merged");
    expect(readFileSync(path.join(sb.root, "container.txt"), "utf8")).toBe("made-in-the-container\n");
    await sb.ok(["kill", spawned.agentId]);
    await sb.ok(["clean", "--worktree", spawned.worktreeId]);
    await sb.ok(["host", "remove", "ctr"]);
  });

  it("a group spread over this machine and a host: members placed in turn under each place's cap, the host's run by its daemon, pick merges a host member here and cleans the rest on both sides", async () => {
    commitAgentType("member", `${process.execPath} ${GROUP_MEMBER}`);
    await sb.ok(["trust"]);
    // One slot on each side: this machine's queue.maxParallel, the host's --max-agents.
    await sb.ok(["host", "add", "box-one", "--exec", `runuser -u ${host.user} --`, "--root", root, "--max-agents", "1"]);
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    try {
      const unknown = await sb.pu(["group", "run", "task", "--agent", "member", ...promptFiles(["x", "y"]), "--on", "local,nosuch"]);
      expect(unknown.code).toBe(3);
      expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
      expect(unknown.stderr).toMatch(/no host named nosuch/);
      const twice = await sb.pu(["group", "run", "task", "--agent", "member", ...promptFiles(["x", "y"]), "--on", "box-one,box-one"]);
      expect(twice.code).toBe(2);
      expect(twice.stderr).toMatch(/--on: box-one is listed twice/);
      // The host's daemon applies its own trust: reviewed and given from here (the new commit pushed first).
      expect(await sb.ok(["trust", "--on", "box-one", "--show"])).toMatch(/NOT TRUSTED .*group-member/);
      await sb.ok(["trust", "--on", "box-one"]);

      const started = await sb.puJson<{ groupId: string }>(["group", "run", "spread task", "--agent", "member", ...promptFiles(["a", "b", "c", "d"]), "--on", "local,box-one"]);
      const done = await waitFor(`group ${started.groupId} to end`, async () => {
        const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]);
        return ["complete", "failed", "cancelled"].includes(group.phase) ? group : undefined;
      }, 120_000, 250);
      expect(done.phase, JSON.stringify(done)).toBe("complete");
      const onHost = done.members.filter((m) => m.host === "box-one");
      const here = done.members.filter((m) => m.host === null);
      expect(onHost.length).toBeGreaterThan(0);
      expect(here.length).toBeGreaterThan(0);
      expect(onHost.length + here.length).toBe(4);
      for (const m of done.members) expect(m).toMatchObject({ state: "done", outputSource: "file", diff: { files: 2, insertions: 2, deletions: 0 } });
      // A host member worked in a worktree of the host's mirror, as the host's user; its output came from there.
      const remote = onHost[0]!;
      expect(remote.worktreePath!.startsWith(`${root}/projects/`)).toBe(true);
      expect(statSync(remote.worktreePath!).uid).toBe(host.uid);
      expect(remote.output).toContain(`output of ${remote.variant} (turn 1)`);
      // Never more than one member at a time on either side (each place's cap is 1): from the recorded times.
      const recorded = (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateWithGroups).multi_agent_groups.find((g) => g.group_id === started.groupId)!;
      for (const place of [null, "box-one"]) {
        const spans = Object.entries(recorded.members)
          .filter(([, m]) => (m.host ?? null) === place)
          .map(([v, m]) => [Date.parse(m.started_at), Date.parse(recorded.individual_outputs[v]!.finished_at)] as const)
          .sort((a, b) => a[0] - b[0]);
        for (let i = 1; i < spans.length; i++) expect(spans[i]![0], `members on ${place ?? "this machine"} overlapped`).toBeGreaterThanOrEqual(spans[i - 1]![1]);
      }
      expect(await sb.ok(["group", "status", started.groupId])).toMatch(new RegExp(`done\\s+${remote.variant} \\S+ on box-one`));
      expect(await sb.ok(["group", "compare", started.groupId])).toMatch(/\bHOST\b/);
      // The host member's change, computed on the host.
      const diff = await sb.puJson<{ files: { path: string }[] }>(["group", "diff", started.groupId, remote.variant]);
      expect(diff.files.map((f) => f.path).sort()).toEqual([`${remote.variant}.txt`, "ok.txt"]);

      // Pick the host's member: its branch fetched back and merged into main here; every other worktree removed where it lives.
      const picked = await sb.puJson<{ merge: { status: string }; clean: { cleaned: { worktreeId: string }[] } }>(["group", "pick", started.groupId, remote.variant]);
      expect(picked.merge.status).toBe("merged");
      expect(readFileSync(path.join(sb.root, `${remote.variant}.txt`), "utf8")).toBe(`${remote.variant} line 1\n`);
      const others = done.members.filter((m) => m.variant !== remote.variant);
      expect(picked.clean.cleaned.map((c) => c.worktreeId).sort()).toEqual(others.map((m) => m.worktreeId).sort());
      for (const m of others) expect(existsSync(m.worktreePath!), `${m.variant}'s worktree on ${m.host ?? "this machine"}`).toBe(false);
      // Nothing unmerged is left there: the host goes without --force.
      await sb.ok(["host", "remove", "box-one"]);
    } finally {
      rmSync(path.join(sb.home, "config.yaml"), { force: true });
    }
  });

  it("a control plane SIGKILLed while a group's members run on a host goes on following them: none starts twice, the results land here", async () => {
    // A member that takes a while (its scenario read from a file the host's user can read).
    scriptedAgentType("slowmember", GROUP_MEMBER, { default: { slowMs: 6000 } });
    await sb.ok(["trust", "--on", "box"]);

    const started = await sb.puJson<{ groupId: string }>(["group", "run", "slow task", "--agents", "slowmember,member", "--on", "box"]);
    const stateFile = () => (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateWithGroups).multi_agent_groups.find((g) => g.group_id === started.groupId)!;
    // Killed once the slow member's group on the host is recorded here and its agent is working there.
    await waitFor("the slow member to run on the host", async () => {
      const member = stateFile().members.slowmember;
      return member?.host_group_id && member.agent_id ? member : undefined;
    }, 60_000, 100);
    const before = stateFile().members.slowmember!;
    await sb.sigkillDaemon();

    const done = await waitFor(`group ${started.groupId} to end`, async () => {
      const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]);
      return ["complete", "failed", "cancelled"].includes(group.phase) ? group : undefined;
    }, 120_000, 250);
    expect(done.phase, JSON.stringify(done)).toBe("complete");
    for (const m of done.members) expect(m).toMatchObject({ state: "done", host: "box", outputSource: "file" });
    expect(done.members.find((m) => m.variant === "slowmember")?.output).toContain("output of slowmember (turn 1)");
    // The host made one group per member, and the slow member ran once: the agent recorded before the kill.
    const hostState = JSON.parse(readFileSync(`${root}/home/state.json`, "utf8")) as { multi_agent_groups: { settings: { placed_by?: { group_id: string; variant: string } }; agent_ids: string[] }[] };
    const placed = hostState.multi_agent_groups.filter((g) => g.settings.placed_by?.group_id === started.groupId);
    expect(placed.map((g) => g.settings.placed_by!.variant).sort()).toEqual(["member", "slowmember"]);
    expect(placed.find((g) => g.settings.placed_by!.variant === "slowmember")!.agent_ids).toEqual([before.agent_id]);
    expect(stateFile().members.slowmember!.agent_id).toBe(before.agent_id);
    // Picked and merged here, then its worktree on the host removed too: nothing of the group is left there.
    const picked = done.members.find((m) => m.variant === "member")!;
    await sb.puJson(["group", "pick", started.groupId, "member"]);
    await sb.ok(["clean", "--worktree", picked.worktreeId!]);
    expect(existsSync(picked.worktreePath!)).toBe(false);
  });

  it("pu group cancel stops the members on the host: their groups there are cancelled and their agents end", async () => {
    scriptedAgentType("hangmember", GROUP_MEMBER, { default: { hang: true } });
    await sb.ok(["trust", "--on", "box"]);

    const started = await sb.puJson<{ groupId: string }>(["group", "run", "endless task", "--agent", "hangmember", ...promptFiles(["p", "q"]), "--on", "box"]);
    // The host's own caps apply there (its queue.maxParallel is 1 on this 2-core machine): one member runs, the other waits its turn there.
    const running = await waitFor("a member's agent to run on the host", async () => {
      const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]);
      const ids = group.members.map((m) => m.agentId).filter((id): id is string => id !== null);
      if (ids.length === 0) return undefined;
      const agents = await Promise.all(ids.map((id) => remoteAgent(id)));
      return agents.every((a) => a.live && a.pid) ? agents : undefined;
    }, 60_000, 250);
    for (const agent of running) expect(uidOf(agent.pid!)).toBe(host.uid);
    await sb.ok(["group", "cancel", started.groupId]);
    for (const agent of running) {
      await waitFor(`member agent ${agent.id} to end on the host`, async () => (isProcessAlive(agent.pid!) ? undefined : true), 30_000, 100);
    }
    const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]);
    expect(group.phase).toBe("cancelled");
    for (const m of group.members) expect(m).toMatchObject({ state: "cancelled", host: "box" });
    const hostState = JSON.parse(readFileSync(`${root}/home/state.json`, "utf8")) as { multi_agent_groups: { phase: string; settings: { placed_by?: { group_id: string } } }[] };
    const placed = hostState.multi_agent_groups.filter((g) => g.settings.placed_by?.group_id === started.groupId);
    expect(placed.map((g) => g.phase)).toEqual(["cancelled", "cancelled"]);
    // What was started holds nothing: cleaned on the host without --force.
    for (const m of group.members) if (m.worktreeId) await sb.ok(["clean", "--worktree", m.worktreeId]);
  });

  it("a workflow's group step with on: [local, box] spreads the ticket's group over this machine and the host", async () => {
    mkdirSync(path.join(sb.root, ".pu", "workflows"), { recursive: true });
    writeFileSync(
      path.join(sb.root, ".pu", "workflows", "SPREAD.yaml"),
      'steps:\n  - name: explore\n    type: multi_prompt\n    agent: member\n    prompt: "try {{TITLE}}"\n    prompts: ["one way", "another way"]\n    on: [local, box]\n',
    );
    await sb.ok(["trust"]);
    const created = (await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", "the spread ticket", "--type", "SPREAD"])).ticket;
    const done = await waitFor("the ticket to be done", async () => {
      const shown = await sb.puJson<{ ticket: { state: string; history?: { event: string }[] } }>(["ticket", "show", created.id]);
      return shown.ticket.state === "done" ? shown : undefined;
    }, 120_000, 250);
    expect(done.ticket.history?.map((h) => h.event)).toEqual(["dispatched", "group started", "step done", "done"]);
    const recorded = (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateWithGroups).multi_agent_groups.find((g) => (g as { ticket_id?: string }).ticket_id === created.id)!;
    expect(Object.values(recorded.members).map((m) => m.host ?? "local").sort()).toEqual(["box", "local"]);
    expect(Object.values(recorded.individual_outputs).map((r) => (r as { state?: string }).state)).toEqual(["done", "done"]);
    // Nothing of it is kept for the tests after: the members' worktrees (here and on the host) and the ticket's.
    const members = Object.values(recorded.members).map((m) => (m as { worktree_id?: string }).worktree_id!);
    const ticketWorktree = Object.entries((await sb.status()).worktrees).find(([, w]) => (w as { name: string }).name === created.id.toLowerCase())?.[0];
    for (const id of [...members, ...(ticketWorktree ? [ticketWorktree] : [])]) await sb.ok(["clean", "--worktree", id, "--force"]);
  });

  it("a project with queue.hosts: [box] runs its ticket there step by step (gate, artifact, timeout notice, the ticket's worktree), follows it across a SIGKILL of the control plane, takes its review here, and merges its branch here", async () => {
    scriptedAgentType("ticketmember", GROUP_MEMBER, { default: { slowMs: 2500 } });
    await sb.ok(["trust", "--on", "box"]);
    mkdirSync(path.join(sb.root, ".pu", "workflows"), { recursive: true });
    writeFileSync(
      path.join(sb.root, ".pu", "workflows", "HOSTED.yaml"),
      'finish: merge\nsteps:\n  - name: build\n    agent: ticketmember\n    prompt: "build {{TITLE}}"\n    gate: { run: "test -f ok.txt" }\n  - name: check\n    agent: ticketmember\n    prompt: "check {{TITLE}}"\n    artifact: ok.txt\n    review: plan\n    timeout_minutes: 0.02\n',
    );
    // The config is committed (the merge at the end wants a clean checkout here), and so is its restoring.
    const { before, commitConfig } = projectConfig();
    onTestFinished(() => commitConfig(before, "queue.hosts off again"));
    writeFileSync(path.join(sb.root, ".pu", "config.yaml"), `queue:\n  hosts: [box, nosuch]\n${before}`);
    await sb.ok(["trust"]);
    // A place that is no host is said in pu queue (its tickets would never start there).
    expect((await sb.puJson<{ problems: { message: string }[] }>(["queue"])).problems.map((p) => p.message)).toContain("queue.hosts: no host named nosuch (pu host list; local is this machine)");
    commitConfig(`queue:\n  hosts: [box]\n${before}`, "tickets run on box");
    await sb.ok(["trust"]);

    const created = (await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", "the hosted ticket", "--type", "HOSTED"])).ticket;
    type StateJson = { agents: { ticket_id: string; host?: string; status: string; current_step?: string | null; last_message?: string | null; session_name?: string | null; host_step?: { step: string; key: string; group_id?: string | null } | null }[] };
    const inFlight = () => (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateJson).agents.find((a) => a.ticket_id === created.id);
    // Killed while its first step's agent works on the host.
    const first = await waitFor("the ticket's first step to run on the host", async () => {
      const a = inFlight();
      return a?.host_step?.group_id && a.session_name ? a : undefined;
    }, 60_000, 100);
    expect(first).toMatchObject({ host: "box", host_step: { step: "build" } });
    expect(await sb.ok(["queue"])).toMatch(new RegExp(`${created.id}\\s+build\\s+\\S+\\s+${first.session_name}\\s+box`));
    await sb.sigkillDaemon();
    // The next command starts the control plane again; it picks the ticket up where state.json says.
    await sb.ok(["queue"]);

    // The check step outlasts its timeout_minutes (1.2 s of a 2.5 s turn): flagged once, as here; the agent goes on there.
    await waitFor("the check step's timeout notice", async () => {
      const a = inFlight();
      return a?.current_step === "check" && a.status === "awaiting_input" && /^step check timed out after 0\.02 min; the agent is still working on host box$/.test(a.last_message ?? "") ? a : undefined;
    }, 60_000, 50).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${JSON.stringify(inFlight())}\n${await sb.ok(["ticket", "show", created.id])}`);
    });
    // The review is decided here, as for any ticket: the check step's agent on the host is done, the ticket waits.
    await waitFor("the check step to wait for its review", async () => {
      const reviews = await sb.puJson<{ reviews: { ticketId: string; reviewState: string | null; step: string | null }[] }>(["review", "list"]);
      return reviews.reviews.find((r) => r.ticketId === created.id && r.reviewState === "pending_plan" && r.step === "check");
    }, 120_000, 250);
    await sb.ok(["review", "approve", created.id]);
    const done = await waitFor("the ticket to be done", async () => {
      const shown = await sb.puJson<{ ticket: { state: string; history?: { event: string; note?: string }[] } }>(["ticket", "show", created.id]);
      return shown.ticket.state === "done" ? shown : undefined;
    }, 120_000, 250);
    const events = done.ticket.history?.map((h) => `${h.event}${h.note ? `: ${h.note}` : ""}`) ?? [];
    expect(events[0]).toBe("dispatched: on host box");
    expect(events).toContain("step done: on host box");
    expect(events).toContain("approved");
    expect(events.at(-1)).toBe("done: merged into main (from host box)");
    // The host ran one group per step (none twice across the kill); the second in the worktree the first made.
    const hostState = JSON.parse(readFileSync(`${root}/home/state.json`, "utf8")) as { multi_agent_groups: { settings: { placed_by?: { group_id: string; variant: string }; shared_worktree?: string | null }; members: Record<string, { worktree_id?: string; prompt: string }> }[] };
    const steps = hostState.multi_agent_groups.filter((g) => g.settings.placed_by?.group_id === `ticket-${created.id}`);
    expect(steps.map((g) => g.settings.placed_by!.variant.replace(/-[0-9a-f]{8}$/, ""))).toEqual([`${created.id}-build`, `${created.id}-check`]);
    const worktreeId = Object.values(steps[0]!.members)[0]!.worktree_id!;
    expect(steps[1]!.settings.shared_worktree).toBe(worktreeId);
    expect(Object.values(steps[1]!.members)[0]!.prompt).toBe("check the hosted ticket");
    // Both steps' work came back as commits and is merged into main here; the step's output came back too.
    const files = execFileSync("git", ["ls-tree", "--name-only", "main"], { cwd: sb.root, encoding: "utf8" }).split("\n");
    expect(files).toContain("ok.txt");
    expect(files.filter((f) => /-build-[0-9a-f]{8}\.txt$/.test(f) || /-check-[0-9a-f]{8}\.txt$/.test(f))).toHaveLength(2);
    expect(readFileSync(path.join(sb.root, ".pu", "tickets", "output", `${created.id}.md`), "utf8")).toMatch(/^output of .*-check-[0-9a-f]{8} \(turn 1\): check the hosted ticket/);
    // Nothing unmerged is left on the host: its worktree goes without --force.
    await sb.ok(["clean", "--worktree", worktreeId]);
  });

  it("a ticket's step on a host whose agent sits busy on an unchanged screen past hungAfterMinutes is flagged once, as here, and goes on", async () => {
    scriptedAgentType("quietmember", GROUP_MEMBER, { default: { slowMs: 6000 } });
    const config = path.join(sb.root, ".pu", "config.yaml");
    const workflow = path.join(sb.root, ".pu", "workflows", "QUIET.yaml");
    const before = readFileSync(config, "utf8");
    onTestFinished(() => {
      rmSync(workflow, { force: true });
      sb.git(["rm", "-q", "--cached", "--ignore-unmatch", workflow]);
      commitFiles({ [config]: before }, "queue.hosts off again");
    });
    commitFiles({ [config]: `queue:\n  hosts: [box]\n  hungAfterMinutes: 0.02\n${before}`, [workflow]: 'steps:\n  - name: think\n    agent: quietmember\n    prompt: "think about {{TITLE}}"\n' }, "quiet tickets run on box");
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    const created = (await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", "the quiet ticket", "--type", "QUIET"])).ticket;
    type StateJson = { agents: { ticket_id: string; status: string; last_message?: string | null; session_context_ref?: string | null }[] };
    const inFlight = () => (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateJson).agents.find((a) => a.ticket_id === created.id);
    // The member says nothing for 6 s of its turn: busy on the host, its screen unchanged past 1.2 s.
    const flagged = await waitFor("the hung notice", async () => {
      const a = inFlight();
      return a?.status === "awaiting_input" ? a : undefined;
    }, 60_000, 50);
    expect(flagged.last_message).toBe("the agent's screen has not changed for 0.02 min while it is busy (step think, on host box)");
    const worktreeId = flagged.session_context_ref;
    // Nothing was stopped: the step ends on its own and the ticket is done.
    const done = await waitFor("the ticket to be done", async () => {
      const shown = await sb.puJson<{ ticket: { state: string; history?: { event: string; note?: string }[] } }>(["ticket", "show", created.id]);
      return shown.ticket.state === "done" ? shown : undefined;
    }, 120_000, 250);
    expect(done.ticket.history?.map((h) => h.event)).toContain("step done");
    const notices = readFileSync(path.join(sb.home, "daemon.log"), "utf8").split("\n").filter((l) => l.includes('"ticket_awaiting_input"') && l.includes(created.id));
    expect(notices).toHaveLength(1);
    if (worktreeId) await sb.ok(["clean", "--worktree", worktreeId, "--force"]);
  });

  it("a ticket the repository carries (pu did not write it) waits for pu trust: queue.hosts sends nothing to the host before; trusted, it runs there", async () => {
    scriptedAgentType("clonedmember", GROUP_MEMBER, { default: { slowMs: 20_000 } });
    const config = path.join(sb.root, ".pu", "config.yaml");
    const before = readFileSync(config, "utf8");
    const workflow = path.join(sb.root, ".pu", "workflows", "CLONED.yaml");
    const ticketFile = path.join(sb.root, ".pu", "tickets", "queue", "CLONED-0001.md");
    // As a clone brings them: the project's queue.hosts, a workflow, and a ticket pu did not write here.
    onTestFinished(() => {
      rmSync(workflow, { force: true });
      rmSync(ticketFile, { force: true });
      sb.git(["rm", "-q", "--cached", "--ignore-unmatch", workflow, ticketFile]);
      commitFiles({ [config]: before }, "queue.hosts and the committed ticket gone again");
    });
    commitFiles({ [config]: `queue:\n  hosts: [box]\n${before}`, [workflow]: 'steps:\n  - name: run\n    agent: clonedmember\n    prompt: "run {{TITLE}}"\n' }, "tickets run on box");
    // The person trusts the project's files as they are now (the agent type, the workflow), here and on the host...
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    // ...and then a ticket arrives in the repository (a pull), written by someone else.
    commitFiles({ [ticketFile]: ["---", "id: CLONED-0001", "type: CLONED", 'title: "from a pull"', "priority: P1", 'created_at: "2020-01-01T00:00:00Z"', "---", "", "work from a pull", ""].join("\n") }, "a ticket from someone else");
    type StateJson = { agents: { ticket_id: string; host?: string; host_step?: { group_id?: string | null } | null }[] };
    // state.json is written once the queue first holds work.
    const inFlight = () => {
      const file = path.join(sb.home, "state.json");
      return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as StateJson).agents.find((a) => a.ticket_id === "CLONED-0001") : undefined;
    };
    const hostGroups = () => {
      const file = `${root}/home/state.json`;
      const hostState = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { multi_agent_groups?: { settings: { placed_by?: { group_id: string } } }[] }) : {};
      return (hostState.multi_agent_groups ?? []).filter((g) => g.settings.placed_by?.group_id === "ticket-CLONED-0001");
    };
    await waitFor("the committed ticket to be held as untrusted", async () => {
      const q = await sb.puJson<{ problems: { file: string; message: string }[] }>(["queue"]);
      return q.problems.some((p) => p.file.endsWith("CLONED-0001.md") && p.message.includes("pu trust")) ? q : undefined;
    }, 30_000, 100);
    // Held here: not dispatched, and nothing asked of the host.
    expect(inFlight()).toBeUndefined();
    expect(hostGroups()).toEqual([]);

    await sb.ok(["trust"]);
    const running = await waitFor("the trusted ticket to run on the host", async () => {
      const a = inFlight();
      return a?.host_step?.group_id ? a : undefined;
    }, 60_000, 100).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await sb.ok(["queue"])}\n${await sb.ok(["ticket", "show", "CLONED-0001"]).catch(String)}`);
    });
    expect(running.host).toBe("box");
    expect(hostGroups()).toHaveLength(1);
    await sb.ok(["ticket", "cancel", "CLONED-0001"]);
    await waitFor("the ticket to leave the queue", async () => (inFlight() === undefined ? true : undefined), 30_000, 100);
  });

  it("a plan's workers spread over the host and this machine (--on box,local): the host's run there, their gate runs recorded as evidence here, their work merged into the plan's branch; a control plane SIGKILLed meanwhile follows them again", async () => {
    // Every role is the scripted planbot (its scenario in a file the host's user can read); the worker's
    // agent type and the task gate are in the committed config, so the host's mirror has them too.
    const planTask = (id: string, blockedBy: string[] = []) => ({ id, subject: `make ${id}.txt`, description: `write ${id}.txt`, blockedBy, criteria: [`${id}.txt exists`] });
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(config, `plan:\n  agents: { explorer: planbot, planner: planbot, worker: planbot, verifier: planbot }\n  taskGate: test -f "$PU_TASK_ID.txt"\n  verify: ["test -f a.txt"]\n${readFileSync(config, "utf8")}`);
    scriptedAgentType("planbot", PLAN_ROLE, { tasks: [planTask("a"), planTask("b", ["a"]), planTask("c", ["a"])], slowMs: 2500 });
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);

    const unknown = await sb.pu(["plan", "start", "three files", "--auto", "--on", "local,nosuch"]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/no host named nosuch/);
    const started = await sb.puJson<{ sessionId: string; dir: string; branch: string }>(["plan", "start", "three files", "--auto", "--on", "box,local"]);
    const id = started.sessionId;
    const taskFile = (task: string) => JSON.parse(readFileSync(path.join(started.dir, "tasks", `${task}.json`), "utf8")) as { status: string; placement?: { host: string; key: string; group_id?: string; agent_id?: string } };
    // The first ready task goes to the first place listed; killed once its worker runs on the host.
    const placed = await waitFor("task a's worker to run on the host", async () => {
      const a = existsSync(path.join(started.dir, "tasks", "a.json")) ? taskFile("a") : undefined;
      return a?.placement?.group_id && a.placement.agent_id ? a.placement : undefined;
    }, 90_000, 100);
    expect(placed.host).toBe("box");
    await sb.sigkillDaemon();

    type PlanStatus = { phase: string; tasks: { id: string; status: string; host?: string }[]; options: { on?: string[] } };
    const done = await waitFor(`plan ${id} to end`, async () => {
      const plan = await sb.puJson<PlanStatus>(["plan", "status", id]);
      return ["COMPLETE", "FAILED", "CANCELLED"].includes(plan.phase) ? plan : undefined;
    }, 150_000, 500);
    expect(done.phase, JSON.stringify(await sb.puJson(["plan", "evidence", id]))).toBe("COMPLETE");
    expect(done.options.on).toEqual(["box", "local"]);
    const work = done.tasks.filter((t) => t.id !== "verify");
    expect(work.every((t) => t.status === "resolved")).toBe(true);
    // Both places took workers.
    const onHost = work.filter((t) => t.host === "box").map((t) => t.id);
    expect(onHost).toContain("a");
    expect(work.some((t) => t.host === undefined)).toBe(true);
    expect(await sb.ok(["plan", "status", id])).toMatch(/resolved\s+a: make a\.txt \[\S* ?on box\]/);

    // The plan's branch here has every task's work; b and c, wherever they ran, started from it with a's (done on the host) merged.
    const files = execFileSync("git", ["ls-tree", "--name-only", started.branch], { cwd: sb.root, encoding: "utf8" }).split("\n");
    expect(files).toEqual(expect.arrayContaining(["a.txt", "b.txt", "c.txt"]));
    // Merged into the branch the worker's worktree was made from, not the branch the project's first host agent started from.
    expect(execFileSync("git", ["ls-tree", "--name-only", "main"], { cwd: sb.root, encoding: "utf8" }).split("\n")).not.toContain("a.txt");
    for (const t of ["b", "c"]) expect(execFileSync("git", ["show", `${started.branch}:${t}.txt`], { cwd: sb.root, encoding: "utf8" })).toContain("a:present");
    // The host's gate runs are the task's evidence here; the worker's note came back as its report.
    const evidence = await sb.puJson<{ evidenceLog: { task_id?: string; command?: string; exit_code?: number; summary?: string }[] }>(["plan", "evidence", id]);
    for (const t of onHost) {
      expect(evidence.evidenceLog.some((e) => e.task_id === t && e.command === 'test -f "$PU_TASK_ID.txt"' && e.exit_code === 0 && /\[on host box\]/.test(e.summary ?? ""))).toBe(true);
      expect(readFileSync(path.join(started.dir, "reports", `${t}.md`), "utf8")).toContain(`note from the worker of ${t} as ${host.user} (without the plan's files)`);
    }
    // One group per host worker on the host, despite the kill: a's ran once (its agent the one recorded before), and each was told the design.
    const hostState = JSON.parse(readFileSync(`${root}/home/state.json`, "utf8")) as { multi_agent_groups: { settings: { placed_by?: { group_id: string; variant: string } }; agent_ids: string[]; members: Record<string, { prompt: string }> }[] };
    const groups = hostState.multi_agent_groups.filter((g) => g.settings.placed_by?.group_id === `plan-${id}`);
    expect(groups).toHaveLength(onHost.length);
    expect(groups.find((g) => g.settings.placed_by!.variant === placed.key)!.agent_ids).toEqual([placed.agent_id]);
    for (const g of groups) expect(Object.values(g.members)[0]!.prompt).toMatch(/The plan's design:[\s\S]*One file per task/);
    // The host's worktrees hold nothing unmerged: cleaned without --force; then the plan's worktrees here (the tests after count theirs).
    for (const t of onHost) {
      const worktreeId = (taskFile(t).placement as { worktree_id?: string } | undefined)?.worktree_id;
      if (worktreeId) await sb.ok(["clean", "--worktree", worktreeId]);
    }
    const here = Object.entries((await sb.status()).worktrees).filter(([, w]) => (w as { name: string; host?: string }).name.startsWith(`plan-${id}-`) && !(w as { host?: string }).host);
    expect(here.length).toBeGreaterThan(0);
    for (const [worktreeId] of here) await sb.ok(["clean", "--worktree", worktreeId, "--force"]);
  });

  it("pu plan cancel ends a plan's worker on the host: its group there cancelled, its agent gone, the task failed", async () => {
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(config, readFileSync(config, "utf8").replaceAll(": planbot", ": slowplanbot"));
    scriptedAgentType("slowplanbot", PLAN_ROLE, { tasks: [{ id: "slow", subject: "take a while", description: "", blockedBy: [], criteria: ["never ends"] }], slowMs: 600_000 });
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    const started = await sb.puJson<{ sessionId: string; dir: string }>(["plan", "start", "one slow file", "--auto", "--skip-verify", "--on", "box"]);
    const placement = await waitFor("the worker to run on the host", async () => {
      const file = path.join(started.dir, "tasks", "slow.json");
      const task = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { placement?: { group_id?: string; agent_id?: string; worktree_id?: string } }) : undefined;
      return task?.placement?.group_id && task.placement.agent_id ? task.placement : undefined;
    }, 90_000, 100).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${JSON.stringify(await sb.puJson(["plan", "evidence", started.sessionId]))}`);
    });
    const worker = await waitFor("the worker's agent to be live there", async () => {
      const agent = await remoteAgent(placement.agent_id!).catch(() => undefined);
      return agent?.live && agent.pid ? agent : undefined;
    }, 30_000, 250);
    expect(uidOf(worker.pid!)).toBe(host.uid);
    const cancelled = await sb.puJson<{ phase: string; tasks: { id: string; status: string; host?: string }[] }>(["plan", "cancel", started.sessionId]);
    expect(cancelled.phase).toBe("CANCELLED");
    expect(cancelled.tasks.find((t) => t.id === "slow")).toMatchObject({ status: "failed", host: "box" });
    await waitFor("the worker's agent to end on the host", async () => (isProcessAlive(worker.pid!) ? undefined : true), 30_000, 100);
    const hostState = JSON.parse(readFileSync(`${root}/home/state.json`, "utf8")) as { multi_agent_groups: { group_id: string; phase: string }[] };
    expect(hostState.multi_agent_groups.find((g) => g.group_id === placement.group_id)?.phase).toBe("cancelled");
    await sb.ok(["clean", "--worktree", placement.worktree_id!, "--force"]);
  });

  /**
   * The test model server, reached on the host through `ssh -R` (127.0.0.1:port there is this
   * machine's server), and a Claude Code setup in `dir` on the host that uses it.
   */
  const modelServerOnHost = async (dir: string) => {
    const server = await startModelServer({});
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const forward = spawn("ssh", ["-F", host.configFile, "-N", "-o", "ExitOnForwardFailure=yes", "-R", `${port}:127.0.0.1:${new URL(server.url).port}`, host.alias], { stdio: "ignore" });
    const close = async () => {
      forward.kill("SIGKILL");
      await server.close();
    };
    try {
      const home = agentHome("claude", { dir, serverUrl: `http://127.0.0.1:${port}`, trustedDirs: [hostMirrorPath({ root }, sb.root)] });
      execFileSync("chown", ["-R", `${host.user}:`, path.join(dir, ".claude"), path.join(dir, ".claude.json")]);
      // The forward reaches this model server (not something else that happens to listen there).
      await waitFor("the port forward to reach the model server", async () => {
        if (!(await listening(port))) return undefined;
        await fetch(`http://127.0.0.1:${port}/pu-forward-check`).catch(() => undefined);
        return server.requests.some((r) => r.path === "/pu-forward-check") ? true : undefined;
      }, 30_000, 200);
      return { server, env: { ...home.env, SHELL: "/bin/bash" }, close };
    } catch (error) {
      await close();
      throw error;
    }
  };

  /**
   * The claude type, committed, as a wrapper that points Claude Code at the model server from
   * the host user's own home (where the host's pu looks for its records); `config` goes before
   * the project's own settings. Undone after the test. Returns the model server.
   */
  const claudeTypeOnHost = async (config = "") => {
    const { server, env, close } = await modelServerOnHost(host.home);
    const wrapper = path.join(os.tmpdir(), `pu-e2e-claude-${process.pid}.sh`);
    const quoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
    const exports = Object.entries(env).map(([k, v]) => (v === undefined ? `unset ${k}` : `export ${k}=${quoted(v)}`));
    writeFileSync(wrapper, ["#!/bin/sh", ...exports, 'exec claude "$@"', ""].join("\n"), { mode: 0o755 });
    const { before, commitConfig } = projectConfig();
    onTestFinished(async () => {
      commitConfig(before, "the project's config as it was, claude as built in");
      rmSync(wrapper, { force: true });
      await close();
    });
    commitConfig(`${config}${before}${/^agents:/m.test(before) ? "" : "\nagents:\n"}  claude:\n    command: ${wrapper}\n`, "claude through its wrapper");
    return server;
  };

  it("a real Claude Code on the host, its model server reached through an ssh port forward: turns read from its hooks there, its file written there, its uncommitted work refused by merge", { timeout: 300_000, retry: 1 }, async () => {
    const dir = `${host.home}/claude-home`;
    mkdirSync(dir, { recursive: true });
    execFileSync("chown", [`${host.user}:`, dir]);
    const { server, env: claudeEnv, close } = await modelServerOnHost(dir);
    let spawned: { agentId: string; worktreeId: string; cwd: string } | undefined;
    let cleaned = false;
    try {
      const env = Object.entries(claudeEnv).flatMap(([k, v]) => (v === undefined ? [] : ["--env", `${k}=${v}`]));
      // A budget given here is kept and enforced by the host's daemon (a dropped link stops nothing).
      const placed = await sb.puJson<{ agentId: string; worktreeId: string; cwd: string }>(["spawn", "RUN: echo made-by-claude-on-the-host > host-claude.txt PACE: 100 USAGE: in=500 out=50 SAY: done on the host", "--agent", "claude", "--on", "box", "--name", "host-claude", "--max-tokens", "100000", ...env]);
      spawned = placed;
      const answered = await server.waitForRequest((r) => r.reply === "text" && r.replyText === "done on the host" && r.finishedAt !== undefined, 120_000).catch(async (error: Error) => {
        // What the agent's terminal shows says why (a dialog, a crash) better than the timeout.
        const screen = await sb.pu(["logs", placed.agentId, "--screen"]);
        throw new Error(`${error.message}\n--- claude's screen on the host ---\n${screen.stdout}${screen.stderr}`);
      });
      expect(answered).toBeDefined();
      const waiting = await waitFor("claude on the host to read waiting (turn_end) here", async () => {
        const agent = (await remoteAgent(placed.agentId)) as RemoteAgentJson & { waitingReason?: string };
        return agent.status === "waiting" && agent.waitingReason === "turn_end" ? agent : undefined;
      }, 60_000, 250);
      expect(waiting).toMatchObject({ host: "box", live: true });
      expect(readFileSync(path.join(placed.cwd, "host-claude.txt"), "utf8").trim()).toBe("made-by-claude-on-the-host");
      expect(uidOf(waiting.pid!)).toBe(host.uid);
      // Its usage, read from its records by the host's daemon, summed here: the tool call and the answer.
      const counted = await waitFor("the host agent's two calls in pu usage here", async () => {
        const doc = await sb.puJson<{ rows: { key: string; host?: string; input: number; output: number; calls: number }[] }>(["usage"]);
        return doc.rows.find((r) => r.key === placed.agentId && r.calls >= 2);
      }, 30_000, 250);
      expect(counted).toMatchObject({ host: "box", input: 1000, output: 100, calls: 2 });
      expect((await sb.ok(["usage"])).split("\n")[0]).toMatch(/\bHOST\b/);
      expect(((await remoteAgent(placed.agentId)) as RemoteAgentJson & { budget?: { maxTokens?: number } }).budget).toEqual({ maxTokens: 100000 });
      // A budget lowered here is set there: the second turn (550 tokens more) crosses 1,200.
      await sb.ok(["budget", placed.agentId, "--max-tokens", "1200"]);
      const before = server.requests.length;
      await sb.ok(["send", placed.agentId, "USAGE: in=500 out=50 SAY: second answer on the host"]);
      await server.waitForRequest((r) => r.seq > before && r.reply === "text" && r.replyText === "second answer on the host" && r.finishedAt !== undefined, 120_000);
      await waitFor("the host to stop claude at its budget", async () => {
        const agent = (await remoteAgent(placed.agentId)) as RemoteAgentJson & { budget?: { exceededAt?: string } };
        return agent.budget?.exceededAt ? agent : undefined;
      }, 20_000, 250);
      const pastBudget = await sb.pu(["send", placed.agentId, "SAY: past the budget"]);
      expect(pastBudget.code).toBe(1);
      expect(pastBudget.stderr.trim().split("\n")).toHaveLength(1);
      expect(pastBudget.stderr).toContain(`pu budget ${placed.agentId} --max-tokens`);
      await sb.ok(["kill", placed.agentId]);
      await waitFor("claude on the host to end", async () => (isProcessAlive(waiting.pid!) ? undefined : true), 30_000, 100);
      // Its work, uncommitted on the host, is refused by merge until committed there.
      const refused = await sb.pu(["merge", placed.worktreeId]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/uncommitted changes \(host-claude\.txt\)/);
      await sb.ok(["clean", "--worktree", placed.worktreeId, "--force"]);
      cleaned = true;
    } finally {
      // A failed attempt leaves nothing for the retry or the later tests to count.
      if (spawned && !cleaned) await sb.pu(["clean", "--worktree", spawned.worktreeId, "--force"]);
      await close();
    }
  });

  it("a ticket on the host counts its earlier steps there: its next step gets what is left of the ticket's budget, is stopped there at it (judged by that budget across a SIGKILL of the control plane), and the ticket waits for a decision", { timeout: 300_000, retry: 1 }, async () => {
    let ticketId: string | undefined;
    onTestFinished(async () => {
      if (!ticketId) return;
      const worktree = (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as { agents: { ticket_id: string; session_context_ref?: string | null }[] }).agents.find((a) => a.ticket_id === ticketId)?.session_context_ref;
      await sb.pu(["ticket", "cancel", ticketId]);
      if (worktree) await sb.pu(["clean", "--worktree", worktree, "--force"]);
    });
    const server = await claudeTypeOnHost("queue:\n  hosts: [box]\n");
    mkdirSync(path.join(sb.root, ".pu", "workflows"), { recursive: true });
    // The first step spends 550 of the ticket's 1,000 tokens; the second step's first call reports 550 more.
    writeFileSync(
      path.join(sb.root, ".pu", "workflows", "HSPEND.yaml"),
      [
        "steps:",
        "  - name: first",
        "    agent: claude",
        '    prompt: "USAGE: in=500 out=50 SAY: first step on the host"',
        "  - name: second",
        "    agent: claude",
        '    prompt: "RUN: sleep 8 RUN: echo past-host-ticket-budget > hb.txt USAGE: in=500 out=50 SAY: unreachable"',
        "",
      ].join("\n"),
    );
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    ticketId = (await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", "two steps on one budget there", "--type", "HSPEND", "--max-tokens", "1000"])).ticket.id;
    // The control plane is SIGKILLed once the second step runs there: the budget that step was
    // given is kept with it, so the restarted daemon judges the step by the same 450 tokens.
    type StateJson = { agents: { ticket_id: string; session_name?: string | null; host_step?: { step: string; max_tokens?: number | null } | null }[] };
    const second = await waitFor("the second step to run on the host", async () => {
      const agent = (JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateJson).agents.find((a) => a.ticket_id === ticketId);
      return agent?.host_step?.step === "second" && agent.session_name ? agent : undefined;
    }, 240_000, 50);
    expect(second.host_step?.max_tokens).toBe(450);
    await sb.sigkillDaemon();
    await sb.ok(["queue"]);
    const review = await waitFor("the ticket to wait for a decision", async () => {
      const list = await sb.puJson<{ reviews: { ticketId: string; lastMessage: string | null }[] }>(["review", "list"]);
      const waiting = list.reviews.find((r) => r.ticketId === ticketId && r.lastMessage);
      if (waiting) return waiting;
      // A ticket that ran its steps to the end never waits: said at once, not after the timeout.
      const shown = await sb.puJson<{ ticket: { state: string } }>(["ticket", "show", ticketId!]);
      return shown.ticket.state === "done" ? { ticketId, lastMessage: "(the ticket ended without waiting for a decision)" } : undefined;
    }, 240_000, 500).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await sb.ok(["ticket", "show", ticketId!])}\n${JSON.stringify(server.requests.map((r) => [r.reply, r.command, r.replyText]))}`);
    });
    // The second step was given what the first left (450 of 1,000), and its first call crossed it.
    expect(review.lastMessage).toMatch(/^needs a decision: step second: stopped at its budget \(max 450 tokens, spent 550 tokens(, \$[\d.]+)?\)$/);
    expect(server.requests.filter((r) => r.replyText === "first step on the host")).toHaveLength(1);
    expect(server.requests.filter((r) => r.command === "echo past-host-ticket-budget > hb.txt")).toEqual([]);
  });

  it("a group on the host with a budget: once its members together have spent it, a member still working there is held at once (its next tool call never runs), though its own figures are far under, by a control plane SIGKILLed as the budget was spent", { timeout: 300_000, retry: 1 }, async () => {
    const server = await claudeTypeOnHost();
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    // Both members run there at once: the host's own cap (cores - 1, 1 here) raised for the test.
    const hostConfig = `${root}/home/config.yaml`;
    const hostConfigBefore = existsSync(hostConfig) ? readFileSync(hostConfig, "utf8") : undefined;
    onTestFinished(() => (hostConfigBefore === undefined ? rmSync(hostConfig, { force: true }) : writeFileSync(hostConfig, hostConfigBefore)));
    writeFileSync(hostConfig, "queue:\n  maxParallel: 2\n", { mode: 0o644 });
    execFileSync("chown", [`${host.user}:`, hostConfig]);
    // Each member is a group of one on the host, held there to the whole budget on its own figures.
    // The first spends 600 tokens a call and answers after a 20 s tool call; the second spends 15
    // a call, far under 1,000 alone, and is in a 60 s tool call when the first answers (sleeps in
    // a row: Claude Code refuses a plain `sleep` of 25 s or more, and asks before a `$(…)`).
    const waitALong = "touch started.txt && sleep 20 && sleep 20 && sleep 20";
    const prompts = [
      "RUN: sleep 20 USAGE: in=550 out=50 SAY: spent the budget",
      `RUN: ${waitALong} RUN: echo past-group-budget > gb.txt SAY: unreachable`,
    ].flatMap((text, i) => {
      const file = path.join(sb.base, `budget-member-${i}.md`);
      writeFileSync(file, `${text}\n`);
      return ["--prompt-file", file];
    });
    const started = await sb.puJson<{ groupId: string }>(["group", "run", "two members, one budget", "--agent", "claude", ...prompts, "--on", "box", "--max-tokens", "1000"]);
    let ended: HostGroupJson | undefined;
    onTestFinished(async () => {
      if (!ended) await sb.pu(["group", "cancel", started.groupId]);
      const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]).catch(() => undefined);
      for (const m of group?.members ?? []) if (m.worktreeId) await sb.pu(["clean", "--worktree", m.worktreeId, "--force"]);
    });
    // The control plane is SIGKILLed as the answer that spends the budget is asked for, before it can
    // know: the next one (started by the status below) follows the members again and holds the other.
    await server.waitForRequest((r) => r.replyText === "spent the budget", 180_000);
    await sb.sigkillDaemon();
    ended = await waitFor("the group to end", async () => {
      const group = await sb.puJson<HostGroupJson>(["group", "status", started.groupId]);
      return ["complete", "failed", "cancelled"].includes(group.phase) ? group : undefined;
    }, 240_000, 500).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await sb.ok(["group", "status", started.groupId])}\n${JSON.stringify(server.requests.map((r) => [r.reply, r.command, r.replyText]))}`);
    });
    const spentAt = server.requests.find((r) => r.replyText === "spent the budget")?.receivedAt;
    const sleepingSince = server.requests.find((r) => r.command === waitALong)?.receivedAt;
    // The budget was spent while the second member was in its 60 s tool call...
    expect(spentAt! - sleepingSince!).toBeLessThan(50_000);
    // ...which was cut short there: the echo after it was never asked for.
    expect(server.requests.filter((r) => r.command === "echo past-group-budget > gb.txt")).toEqual([]);
    // Its tool call did run there (not held at a question): it left its file in its worktree.
    const held = ended.members.filter((m) => existsSync(path.join(m.worktreePath!, "started.txt")));
    expect(held).toHaveLength(1);
    // It was held by a budget set to what it had spent: its own figures alone never reached 1,000.
    const budget = ((await remoteAgent(held[0]!.agentId!)) as RemoteAgentJson & { budget?: { maxTokens?: number; exceededAt?: string } }).budget;
    expect(budget).toMatchObject({ exceededAt: expect.any(String) });
    expect(budget!.maxTokens).toBeLessThan(100);
    // The control plane says so in its own log: the restarted one held that agent, with the budget it gave and why.
    const log = readFileSync(path.join(sb.home, "daemon.log"), "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { event: string; pid: number });
    const restartedPid = log.filter((l) => l.event === "start").at(-1)!.pid;
    const holds = log.filter((l) => l.event === "host_agent_held" && (l as { agentId?: string }).agentId === held[0]!.agentId);
    expect(holds).toEqual([expect.objectContaining({ pid: restartedPid, host: "box", maxTokens: budget!.maxTokens, reason: expect.stringMatching(/max 1000 tokens, spent \d+ tokens/) })]);
  });

  it("a plan's workers on the host with a budget: once they together have spent it, a worker still working there is held at once (its next tool call never runs), and the plan fails for its budget", { timeout: 300_000, retry: 1 }, async () => {
    // The roles that run here are the scripted planbot; the workers, on the host, the real Claude Code. No task gate.
    const config = path.join(sb.root, ".pu", "config.yaml");
    projectConfig().commitConfig(readFileSync(config, "utf8").replace(/^plan:\n(?: .*\n)*/m, ""), "no plan settings");
    const waitALong = "touch started.txt && sleep 20 && sleep 20 && sleep 20";
    scriptedAgentType("budgetplanbot", PLAN_ROLE, {
      tasks: [
        { id: "spend", subject: "spend the budget", description: "RUN: sleep 20 USAGE: in=550 out=50 SAY: spent the budget", blockedBy: [], criteria: ["spent"] },
        { id: "long", subject: "work a long while", description: `RUN: ${waitALong} RUN: echo past-plan-budget > pb.txt SAY: unreachable`, blockedBy: [], criteria: ["never reached"] },
      ],
      slowMs: 200,
    });
    const server = await claudeTypeOnHost("plan:\n  agents: { explorer: budgetplanbot, planner: budgetplanbot, worker: claude, verifier: budgetplanbot }\n");
    // Both workers run there at once: the host's own cap raised for the test.
    const hostConfig = `${root}/home/config.yaml`;
    const hostConfigBefore = existsSync(hostConfig) ? readFileSync(hostConfig, "utf8") : undefined;
    onTestFinished(() => (hostConfigBefore === undefined ? rmSync(hostConfig, { force: true }) : writeFileSync(hostConfig, hostConfigBefore)));
    writeFileSync(hostConfig, "queue:\n  maxParallel: 2\n", { mode: 0o644 });
    execFileSync("chown", [`${host.user}:`, hostConfig]);
    await sb.ok(["trust"]);
    await sb.ok(["trust", "--on", "box"]);
    const started = await sb.puJson<{ sessionId: string; dir: string }>(["plan", "start", "two tasks, one budget", "--auto", "--skip-verify", "--on", "box", "--max-tokens", "1000"]);
    type PlanStatus = { phase: string; failure?: string | null; tasks: { id: string; status: string; host?: string }[] };
    const taskFile = (task: string) => JSON.parse(readFileSync(path.join(started.dir, "tasks", `${task}.json`), "utf8")) as { status: string; placement?: { agent_id?: string; worktree_id?: string } };
    let ended: PlanStatus | undefined;
    onTestFinished(async () => {
      if (!ended) await sb.pu(["plan", "cancel", started.sessionId]);
      for (const t of ["spend", "long"]) {
        const worktreeId = existsSync(path.join(started.dir, "tasks", `${t}.json`)) ? taskFile(t).placement?.worktree_id : undefined;
        if (worktreeId) await sb.pu(["clean", "--worktree", worktreeId, "--force"]);
      }
    });
    ended = await waitFor("the plan to end", async () => {
      const plan = await sb.puJson<PlanStatus>(["plan", "status", started.sessionId]);
      return ["COMPLETE", "FAILED", "CANCELLED"].includes(plan.phase) ? plan : undefined;
    }, 240_000, 500).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await sb.ok(["plan", "status", started.sessionId])}\n${JSON.stringify(server.requests.map((r) => [r.reply, r.command, r.replyText]))}`);
    });
    // The plan fails for its budget; neither worker's turn, ended once it was spent, resolved its task (nothing merged).
    const evidence = await sb.puJson<{ evidenceLog: { task_id?: string; type: string; summary?: string }[] }>(["plan", "evidence", started.sessionId]);
    // Should the plan end otherwise, its evidence says why (a worker that could not start, a task resolved).
    const why = JSON.stringify(evidence.evidenceLog.filter((e) => e.task_id));
    expect(ended.phase, why).toBe("FAILED");
    expect(ended.failure, why).toMatch(/^the plan's budget is spent \(max 1000 tokens, spent \d+ tokens/);
    expect(ended.tasks.map((t) => [t.id, t.status, t.host]), why).toEqual([["long", "failed", "box"], ["spend", "failed", "box"]]);
    expect(evidence.evidenceLog.filter((e) => e.type === "task_failed").map((e) => [e.task_id, e.summary])).toEqual(
      expect.arrayContaining(["long", "spend"].map((t) => [t, expect.stringMatching(/^not resolved: the plan's budget is spent \(max 1000 tokens, spent \d+ tokens.*\) as its worker's turn ended; its worktree keeps what was done$/)])),
    );
    expect(evidence.evidenceLog.some((e) => e.type === "task_resolved")).toBe(false);
    const spentAt = server.requests.find((r) => r.replyText === "spent the budget")?.receivedAt;
    const sleepingSince = server.requests.find((r) => r.command === waitALong)?.receivedAt;
    // The budget was spent while the other worker was in its 60 s tool call...
    expect(spentAt! - sleepingSince!).toBeLessThan(50_000);
    // ...which was cut short there: the echo after it was never asked for.
    expect(server.requests.filter((r) => r.command === "echo past-plan-budget > pb.txt")).toEqual([]);
    // Its tool call did run there (not held at a question): it left its file in its worktree.
    const { agent_id: longAgent, worktree_id: longWorktree } = taskFile("long").placement!;
    const worktreePath = ((await sb.status()).worktrees[longWorktree!] as { path?: string } | undefined)?.path;
    expect(existsSync(path.join(worktreePath!, "started.txt"))).toBe(true);
    const agent = (await remoteAgent(longAgent!)) as RemoteAgentJson & { budget?: { maxTokens?: number; exceededAt?: string } };
    // Held by a budget set to what it had spent, its own figures far under 1,000; the control plane logged the hold.
    expect(agent.budget).toMatchObject({ exceededAt: expect.any(String) });
    expect(agent.budget!.maxTokens).toBeLessThan(100);
    const holds = readFileSync(path.join(sb.home, "daemon.log"), "utf8").split("\n").filter((l) => l.includes('"host_agent_held"') && l.includes(longAgent!)).map((l) => JSON.parse(l));
    expect(holds).toEqual([expect.objectContaining({ host: "box", maxTokens: agent.budget!.maxTokens, reason: expect.stringMatching(/max 1000 tokens, spent \d+ tokens/) })]);
  });

  it("host remove refuses while agents run there; kill and clean route to the host and end them there", async () => {
    const refused = await sb.pu(["host", "remove", "box"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds 1 running agent\(s\) and 0 unmerged worktree\(s\)/);
    const pid = (await remoteAgent(agentId)).pid!;
    // A status stream (what pu dash and pu web follow) carries the host's agents and hears their changes.
    const client = await connectClient({ socketPath: path.join(sb.home, "daemon.sock"), clientName: "pu-test-watcher" });
    const stream = await client.openStream("subscribe_status", { projectRoot: sb.root });
    expect(stream.result.worktrees[worktreeId]?.agents[agentId]).toMatchObject({ host: "box", hostState: "connected", live: true });
    const heard = (async () => {
      for await (const event of stream) {
        if (event.type === "status_event" && event.changed.some((c) => c.agentId === agentId && c.to === "broken")) return event.report.worktrees[worktreeId]?.agents[agentId];
      }
      return undefined;
    })();
    await sb.ok(["kill", agentId]);
    await waitFor("the remote agent's process to end", async () => (isProcessAlive(pid) ? undefined : true), 30_000, 100);
    expect(await heard).toMatchObject({ host: "box", status: "broken", live: false });
    client.close();
    // --all covers the host's worktrees (this one is merged here, so nothing is lost).
    const cleaned = await sb.puJson<{ cleaned: { worktreeId: string; removedPath: boolean }[] }>(["clean", "--all"]);
    expect(cleaned.cleaned).toEqual([expect.objectContaining({ worktreeId, removedPath: true })]);
    const after = await sb.status();
    expect(after.worktrees[worktreeId]).toBeUndefined();
    await sb.ok(["host", "remove", "box"]);
  });

  it("a host running a pu of another protocol is refused in one line naming both versions and pu host install", async () => {
    // The host's installed daemon changed to speak protocol 2 (as a newer pu's would), and restarted:
    // pu-ipc's module and the daemon's bundle, which carries its own copy.
    const copies = execFileSync("sh", ["-c", 'grep -rl --include="protocol.js" --include="pu-engine.cjs" "PROTOCOL_VERSION = 1;" "$1/prefix" || true', "sh", root], { encoding: "utf8" }).split("\n").filter(Boolean);
    expect(copies.some((file) => file.endsWith("pu-engine.cjs"))).toBe(true);
    expect(copies.length).toBeGreaterThan(0);
    for (const file of copies) writeFileSync(file, readFileSync(file, "utf8").replace("PROTOCOL_VERSION = 1;", "PROTOCOL_VERSION = 2;"));
    const hostDaemon = Number(readFileSync(`${root}/home/daemon.pid`, "utf8").trim());
    process.kill(hostDaemon, "SIGTERM");
    await waitFor("the host daemon to stop", async () => (isProcessAlive(hostDaemon) ? undefined : true), 30_000, 100);
    await sb.ok(["host", "add", "newer", "--ssh", host.alias, "--ssh-config", host.configFile, "--root", root]);
    const run = await sb.pu(["spawn", "--on", "newer", "--root", "--command", "true"]);
    expect(run.code).toBe(4);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr, run.stderr).toMatch(/protocol 2/);
    expect(run.stderr).toMatch(/protocol 1/);
    expect(run.stderr, run.stderr).toMatch(/pu host install newer/);
  });
});
