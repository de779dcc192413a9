// The transport hosts stand on (issue 23, first part): another machine's pu daemon reached
// through the person's own OpenSSH, running `pu daemon stdio` there, with pu's own protocol and
// handshake over ssh's stdin/stdout — no port of pu's. A real sshd on 127.0.0.1 and a second
// local user stand in for the other machine; the remote command line is quoted by pu-core.
import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Duplex } from "node:stream";
import { remoteCommandLine } from "@pu/core/remote-argv";
import { connectClientOverStream } from "@pu/ipc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PU_BIN } from "../helpers/pu-sandbox.js";
import { sshdMissing, startSshHost, type SshHost } from "../helpers/sshd.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";

const missing = sshdMissing();
// Only a machine that cannot run sshd skips, and says so; CI installs it (scripts/ci-packages.sh).
if (missing && process.env.CI) throw new Error(missing);
if (missing) console.warn(`host-transport.test.ts skipped: ${missing}`);

type Client = Awaited<ReturnType<typeof connectClientOverStream>>;

describe.skipIf(missing !== undefined)("a host's daemon over ssh (pu daemon stdio)", { timeout: 120_000 }, () => {
  let host: SshHost;
  let project: string;
  const transports: ChildProcess[] = [];

  /** `ssh HOST pu daemon stdio`, and pu's client speaking through it. */
  async function connect(): Promise<{ client: Client; ssh: ChildProcess }> {
    const remote = remoteCommandLine(["env", `PU_HOME=${host.home}/.pu-home`, process.execPath, PU_BIN, "daemon", "stdio"]);
    const ssh = spawn("ssh", [...host.sshArgs(), remote], { stdio: ["pipe", "pipe", "pipe"] });
    transports.push(ssh);
    let stderr = "";
    ssh.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const stream = Duplex.from({ readable: ssh.stdout!, writable: ssh.stdin! });
    try {
      const client = await connectClientOverStream(stream, { clientName: "pu-test-control-plane", timeoutMs: 30_000 });
      return { client, ssh };
    } catch (error) {
      throw new Error(`no pu daemon through ssh: ${String(error)}; ssh said: ${stderr.trim()}`);
    }
  }
  const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

  beforeAll(async () => {
    host = await startSshHost();
    project = `${host.home}/project`;
    execFileSync("runuser", ["-u", host.user, "--", "sh", "-c", 'git init -q -b main "$1" && git -C "$1" -c user.name=host -c user.email=host@example.invalid commit -q --allow-empty -m init', "sh", project]);
  });
  afterAll(async () => {
    for (const ssh of transports) if (ssh.exitCode === null) ssh.kill("SIGKILL");
    await host?.stop();
  }, 60_000);

  it("the host's own daemon answers through ssh, with the same protocol handshake, running as the host's user", async () => {
    const { client } = await connect();
    expect(client.daemon.pid).toBeGreaterThan(0);
    expect(uidOf(client.daemon.pid)).toBe(host.uid);
    const health = await client.request("health", {});
    expect(health).toBeTruthy();
    client.close();
  });

  it("init, spawn and attach on the host: the agent runs there as that user, its output and keys cross the transport", async () => {
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
    const remote = remoteCommandLine(["env", `PU_HOME=${host.home}/.pu-home`, process.execPath, PU_BIN, "daemon", "stdio"]);
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
});
