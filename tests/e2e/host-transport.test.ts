// Hosts, first part (issue 23): another machine's pu daemon reached through the person's own
// OpenSSH (or an exec prefix), running `pu daemon stdio` there, with pu's own protocol and
// handshake over the transport's stdin/stdout — no port of pu's. A real sshd on 127.0.0.1 and a
// second local user with its own home stand in for the other machine: `pu host add`, `check`
// (before and after), `install` (this pu's tarballs, installed by the host's npm under its
// root: the host runs its own copy, never this checkout's files), then the transport itself.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Duplex } from "node:stream";
import { remoteCommandLine } from "@pu/core/remote-argv";
import { connectClientOverStream } from "@pu/ipc/client";
import type { HostCheck } from "@pu/ipc/protocol";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { PuSandbox } from "../helpers/pu-sandbox.js";
import { sshdMissing, startSshHost, type SshHost } from "../helpers/sshd.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";
import { packAll } from "../install/packed.js";

const missing = sshdMissing();
// Only a machine that cannot run sshd skips, and says so; CI installs it (scripts/ci-packages.sh).
if (missing && process.env.CI) throw new Error(missing);
if (missing) console.warn(`host-transport.test.ts skipped: ${missing}`);

type Client = Awaited<ReturnType<typeof connectClientOverStream>>;

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

type HostCheckJson = HostCheck;

describe.skipIf(missing !== undefined)("hosts over ssh and exec: pu host add / check / install / remove, and pu daemon stdio", { timeout: 180_000 }, () => {
  let host: SshHost;
  let sb: PuSandbox;
  let root: string;
  let project: string;
  const transports: ChildProcess[] = [];

  const check = async (name: string) => {
    const run = await sb.pu(["host", "check", name, "--json"]);
    return { code: run.code, report: JSON.parse(run.stdout) as HostCheckJson, stdout: run.stdout, stderr: run.stderr };
  };

  /** `ssh HOST ROOT/bin/pu daemon stdio` (the installed pu), and pu's client speaking through it. */
  async function connect(): Promise<{ client: Client; ssh: ChildProcess }> {
    const remote = remoteCommandLine(["env", `PU_HOME=${root}/home`, `${root}/bin/pu`, "daemon", "stdio"]);
    const ssh = spawn("ssh", [...host.sshArgs(), remote], { stdio: ["pipe", "pipe", "pipe"] });
    transports.push(ssh);
    let stderr = "";
    ssh.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const stream = Duplex.from({ readable: ssh.stdout!, writable: ssh.stdin! });
    try {
      const client = await connectClientOverStream(stream, { clientName: "pu-test-control-plane", timeoutMs: 30_000, remedy: "run `pu host install`" });
      return { client, ssh };
    } catch (error) {
      throw new Error(`no pu daemon through ssh: ${String(error)}; ssh said: ${stderr.trim()}`);
    }
  }

  beforeAll(async () => {
    host = await startSshHost();
    root = `${host.home}/pu-root`;
    project = `${host.home}/project`;
    sb = new PuSandbox("pu-e2e-hosts-");
  });
  afterAll(async () => {
    for (const ssh of transports) if (ssh.exitCode === null) ssh.kill("SIGKILL");
    const leftovers = await sb?.teardown();
    await host?.stop();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("adds a host over ssh and lists it; hostile destinations and options are refused with one line, writing nothing", async () => {
    await sb.ok(["host", "add", "box", "--ssh", host.alias, "--ssh-config", host.configFile, "--root", root, "--max-agents", "4"]);
    const listed = await sb.puJson<{ hosts: { name: string; transport: { kind: string; destination: string }; root: string; maxAgents: number }[] }>(["host", "list"]);
    expect(listed.hosts).toEqual([expect.objectContaining({ name: "box", transport: expect.objectContaining({ kind: "ssh", destination: host.alias }), root, maxAgents: 4 })]);
    const file = `${sb.home}/hosts.json`;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const before = readFileSync(file, "utf8");
    const refusals: [string[], RegExp][] = [
      [["host", "add", "evil", "--ssh=-oProxyCommand=touch /tmp/pu-owned", "--root", root], /destination/],
      [["host", "add", "evil", "--ssh", "me@box;id", "--root", root], /destination/],
      [["host", "add", "evil", "--ssh", host.alias, "--ssh-option", "ProxyCommand=touch /tmp/pu-owned", "--root", root], /ProxyCommand is pu's to set/],
      [["host", "add", "evil", "--ssh", host.alias, "--ssh-option", "StrictHostKeyChecking=no", "--root", root], /host keys are always verified/],
      [["host", "add", "Evil Name", "--ssh", host.alias, "--root", root], /host name/],
      [["host", "add", "evil", "--ssh", host.alias, "--root", "relative/path"], /absolute path/],
      [["host", "add", "box", "--ssh", host.alias, "--root", root], /already exists/],
      [["host", "add", "evil", "--ssh", host.alias, "--exec", "podman exec -i x", "--root", root], /exactly one of/],
      [["host", "add", "evil", "--ssh", host.alias, "--max-agents", "0", "--root", root], /--max-agents expects a whole number of at least 1/],
    ];
    for (const [args, message] of refusals) {
      const run = await sb.pu(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
    expect(readFileSync(file, "utf8")).toBe(before);
  });

  it("check says what the host lacks: node and git found, pu missing (exit 1)", async () => {
    const { code, report } = await check("box");
    expect(code).toBe(1);
    expect(report).toMatchObject({ reachable: true, node: process.version, daemon: null });
    expect(report.git).toMatch(/^git version /);
    expect(report.cores).toBeGreaterThan(0);
    expect(report.freeDiskBytes).toBeGreaterThan(0);
    expect(report.missing).toEqual(["pu (pu host install)"]);
  });

  it("pu host install ships this pu's tarballs over ssh, installs them with the host's npm under its root, and the host is ready", async () => {
    const packed = mkdtempSync(path.join(os.tmpdir(), "pu-e2e-host-packed-"));
    onTestFinished(() => rmSync(packed, { recursive: true, force: true }));
    await packAll(packed);
    const run = await sb.pu(["host", "install", "box", "--packed", packed, "--json"], { timeoutMs: 600_000 });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { installed: string[]; check: HostCheckJson };
    expect(result.installed.map((f) => f.replace(/-[0-9].*$/, ""))).toEqual(["pu-core", "pu-ipc", "pu-web", "pu-engine", "pu-cli"]);
    expect(result.check.puPath).toBe(`${root}/bin/pu`);
    expect(result.check.pu).toMatch(/^pu \d/);
    expect(result.check.missing).toEqual([]);
    expect(result.check.daemon).toMatchObject({ protocolVersion: 1 });
    const daemonPid = result.check.daemon!.pid;
    expect(uidOf(daemonPid)).toBe(host.uid);
    // The host runs its own copy (owned by its user, under its root), and its home is ROOT/home.
    expect(statSync(`${root}/prefix`).uid).toBe(host.uid);
    expect(readFileSync(`/proc/${daemonPid}/cmdline`, "utf8")).toContain(`${root}/prefix/`);
    expect(readFileSync(`${root}/home/daemon.pid`, "utf8").trim()).toBe(String(daemonPid));
    const human = await sb.pu(["host", "check", "box"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`daemon pid ${daemonPid}, pu \\S+, protocol 1`));
  }, 600_000);

  it("through exec (runuser, argv with no shell) check reaches the same host daemon", async () => {
    await sb.ok(["host", "add", "same-box", "--exec", `runuser -u ${host.user} --`, "--root", root]);
    const overSsh = await check("box");
    const overExec = await check("same-box");
    expect(overExec.code, overExec.stdout).toBe(0);
    expect(overExec.report.daemon?.pid).toBe(overSsh.report.daemon?.pid);
  });

  it("the host's own daemon answers pu's client through `ssh HOST pu daemon stdio`, running as the host's user", async () => {
    const { client } = await connect();
    expect(uidOf(client.daemon.pid)).toBe(host.uid);
    expect(await client.request("health", {})).toBeTruthy();
    client.close();
  });

  it("init, spawn and attach on the host: the agent runs there as that user, its output and keys cross the transport", async () => {
    execFileSync("runuser", ["-u", host.user, "--", "sh", "-c", 'git init -q -b main "$1" && git -C "$1" -c user.name=host -c user.email=host@example.invalid commit -q --allow-empty -m init', "sh", project]);
    const { client } = await connect();
    await client.request("init", { projectRoot: project });
    const spawned = await client.request("spawn", { projectRoot: project, root: true, command: "stty raw -echo; echo ready-as-$(id -un); exec cat" });
    const agentId = spawned.agentId;
    expect(uidOf(spawned.agent.pid!)).toBe(host.uid);
    const stream = await client.openStream("attach", { agentId });
    let seen = "";
    const reading = (async () => {
      for await (const event of stream) if (event.type === "output") seen += Buffer.from(event.data).toString("utf8");
    })();
    await waitFor("the agent's first line over ssh", async () => (seen.includes(`ready-as-${host.user}`) ? true : undefined), 30_000, 50);
    await stream.request("input", { agentId, data: Buffer.from("typed-through-ssh") });
    await waitFor("the echo of typed keys", async () => (seen.includes("typed-through-ssh") ? true : undefined), 30_000, 50);
    stream.close();
    await reading;
    client.close();
  });

  it("a dropped transport leaves the host's agent running; a new connection lists it and replays its output", async () => {
    const first = await connect();
    const status = await first.client.request("status", { projectRoot: project });
    const agent = Object.values(status.agents).find((a) => a.live);
    expect(agent, "the agent from the previous test").toBeDefined();
    first.ssh.kill("SIGKILL");
    await first.client.closed;
    expect(isProcessAlive(agent!.pid!)).toBe(true);

    const second = await connect();
    expect(second.client.daemon.pid).toBe(first.client.daemon.pid);
    const again = await second.client.request("status", { projectRoot: project });
    expect(again.agents[agent!.id]?.live).toBe(true);
    const stream = await second.client.openStream("attach", { agentId: agent!.id });
    let replay = "";
    const reading = (async () => {
      for await (const event of stream) if (event.type === "output") replay += Buffer.from(event.data).toString("utf8");
    })();
    await waitFor("the ring's replay over the new connection", async () => (replay.includes("typed-through-ssh") ? true : undefined), 30_000, 50);
    stream.close();
    await reading;
    second.client.close();
  });

  it("garbage through the transport ends that bridge only: the host's daemon and agent go on", async () => {
    const { client } = await connect();
    const daemonPid = client.daemon.pid;
    client.close();
    const remote = remoteCommandLine(["env", `PU_HOME=${root}/home`, `${root}/bin/pu`, "daemon", "stdio"]);
    const garbage = spawn("ssh", [...host.sshArgs(), remote], { stdio: ["pipe", "ignore", "ignore"] });
    transports.push(garbage);
    garbage.stdin!.end(Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5]));
    await new Promise((resolve) => garbage.once("exit", resolve));
    const after = await connect();
    expect(after.client.daemon.pid).toBe(daemonPid);
    const status = await after.client.request("status", { projectRoot: project });
    expect(Object.values(status.agents).some((a) => a.live)).toBe(true);
    after.client.close();
  });

  it("an unreachable host is reported in one bounded check (exit 4), never a hang", async () => {
    await sb.ok(["host", "add", "gone", "--ssh", "127.0.0.1", "--ssh-option", "Port=1", "--ssh-option", "ConnectTimeout=5", "--root", "/srv/pu"]);
    const run = await sb.pu(["host", "check", "gone"]);
    expect(run.code).toBe(4);
    expect(run.stdout).toMatch(/^gone: unreachable through ssh \(.*(refused|Connection)/);
  });

  it("a corrupt hosts.json is reported by list and add, and left as it is; remove forgets a host", async () => {
    const file = `${sb.home}/hosts.json`;
    const good = readFileSync(file, "utf8");
    writeFileSync(file, "{ not json");
    for (const args of [["host", "list"], ["host", "add", "more", "--ssh", host.alias, "--root", root]]) {
      const run = await sb.pu(args);
      expect(run.code, args.join(" ")).not.toBe(0);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/hosts\.json: not valid JSON/);
    }
    expect(readFileSync(file, "utf8")).toBe("{ not json");
    writeFileSync(file, good, { mode: 0o600 });
    await sb.ok(["host", "remove", "gone"]);
    const missingHost = await sb.pu(["host", "remove", "gone"]);
    expect(missingHost.code).toBe(3);
    const listed = await sb.puJson<{ hosts: { name: string }[] }>(["host", "list"]);
    expect(listed.hosts.map((h) => h.name)).toEqual(["box", "same-box"]);
  });
});
