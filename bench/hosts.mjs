// Hosts: agents on another machine reached through OpenSSH, measured against plain ssh doing the
// same thing in the same run. The "other machine" is a private sshd on 127.0.0.1 logging in as
// this user (root here, as in CI) with a host root of its own (so its own PU_HOME and daemon);
// the host runs this checkout's pu (ROOT/bin/pu is a link to it). Figures:
// - keystroke round trip to a remote agent (input through the local daemon → ssh → the host's
//   daemon → its PTY, echo back the same way) vs `ssh -tt HOST 'stty raw -echo; exec cat'`;
// - output throughput from a remote agent to an attached viewer vs `ssh HOST cat FILE`;
// - `pu status` (whole process) with agents on two hosts vs on one;
// - reconnect: after the link (and its shared master) is killed, time until status reads the
//   host connected again, vs a fresh `ssh HOST true`.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { CLI_BIN, connect, echoWaiter, figure, isAlive, killOwned, own, disown, percentile, sleep, startDaemon, stopDaemonByPidFile, summarize, tempWorkspace, timeProcess } from "./lib.mjs";

const SSHD = "/usr/sbin/sshd";
const KEYS = "abcdefghijklmnopqrstuvwxyz";

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A private sshd for this user on 127.0.0.1; `ssh -F config bench-host` reaches it. */
async function startSshd(dir) {
  const user = execFileSync("id", ["-un"], { encoding: "utf8" }).trim();
  chmodSync(dir, 0o755);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "host_key")]);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "client_key")]);
  writeFileSync(path.join(dir, "authorized_keys"), readFileSync(path.join(dir, "client_key.pub")));
  const port = await freePort();
  const config = path.join(dir, "sshd_config");
  writeFileSync(config, [`Port ${port}`, "ListenAddress 127.0.0.1", `HostKey ${path.join(dir, "host_key")}`, `PidFile ${path.join(dir, "sshd.pid")}`, `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`, "StrictModes no", "UsePAM no", "PasswordAuthentication no", "PermitRootLogin prohibit-password", `AllowUsers ${user}`, ""].join("\n"));
  mkdirSync("/run/sshd", { recursive: true });
  const sshd = spawn(SSHD, ["-D", "-f", config, "-E", path.join(dir, "sshd.log")], { stdio: "ignore" });
  own(sshd.pid);
  const knownHosts = path.join(dir, "known_hosts");
  for (let i = 0; i < 100; i++) {
    const scan = spawnSync("ssh-keyscan", ["-p", String(port), "-t", "ed25519", "127.0.0.1"], { encoding: "utf8" });
    if (scan.stdout.trim()) {
      writeFileSync(knownHosts, scan.stdout);
      break;
    }
    await sleep(100);
  }
  const clientConfig = path.join(dir, "ssh_config");
  writeFileSync(clientConfig, ["Host bench-host", "  HostName 127.0.0.1", `  Port ${port}`, `  User ${user}`, `  IdentityFile ${path.join(dir, "client_key")}`, "  IdentitiesOnly yes", `  UserKnownHostsFile ${knownHosts}`, "  LogLevel ERROR", ""].join("\n"));
  return {
    clientConfig,
    ssh: (...args) => ["-F", clientConfig, "-o", "BatchMode=yes", ...args],
    async stop() {
      await killOwned(sshd.pid);
      disown(sshd.pid);
    },
  };
}

/** A host root that runs this checkout's pu. */
function hostRoot(dir, name) {
  const root = path.join(dir, name);
  mkdirSync(path.join(root, "bin"), { recursive: true });
  symlinkSync(CLI_BIN, path.join(root, "bin", "pu"));
  return root;
}

async function keystrokes(count, send, echo) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const key = KEYS[i % KEYS.length];
    const echoed = echo.expect(key);
    const start = performance.now();
    send(key);
    await echoed;
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b);
}

async function viaPu(home, agentId, count) {
  const viewer = await connect(home, "pu-bench-host-keys");
  try {
    const stream = await viewer.openStream("attach", { agentId });
    const echo = echoWaiter();
    const consumed = (async () => {
      for await (const event of stream) if (event.type === "output") echo.seen(Buffer.from(event.data).toString("latin1"));
    })();
    const probe = echo.expect("!");
    await stream.request("input", { agentId, data: Buffer.from("!") });
    await probe;
    const times = await keystrokes(count, (k) => void stream.request("input", { agentId, data: Buffer.from(k) }).catch(() => undefined), echo);
    stream.close();
    viewer.close();
    await consumed.catch(() => undefined);
    return times;
  } finally {
    viewer.close();
  }
}

async function viaSsh(sshd, count) {
  const child = spawn("ssh", sshd.ssh("-tt", "bench-host", "stty raw -echo; exec cat"), { stdio: ["pipe", "pipe", "ignore"] });
  own(child.pid);
  try {
    const echo = echoWaiter();
    child.stdout.on("data", (d) => echo.seen(d.toString("latin1")));
    // stty has run once a probe comes back.
    for (let i = 0; ; i++) {
      const probe = echo.expect("!");
      child.stdin.write("!");
      try {
        await Promise.race([probe, sleep(500).then(() => Promise.reject(new Error("no probe")))]);
        break;
      } catch (error) {
        if (i > 20) throw error;
      }
    }
    await sleep(200);
    return await keystrokes(count, (k) => child.stdin.write(k), echo);
  } finally {
    if (isAlive(child.pid)) await killOwned(child.pid);
    disown(child.pid);
  }
}

async function attachThroughput(home, agentId) {
  const viewer = await connect(home, "pu-bench-host-bytes");
  try {
    const stream = await viewer.openStream("attach", { agentId });
    let bytes = 0;
    let last = 0;
    const consumed = (async () => {
      for await (const event of stream) {
        if (event.type === "output") {
          bytes += event.data.byteLength;
          last = performance.now();
        }
        if (event.type === "exit") break;
      }
    })();
    await sleep(300);
    const start = performance.now();
    await stream.request("input", { agentId, data: Buffer.from("\r") });
    await consumed;
    return { bytes, seconds: (last - start) / 1000 };
  } finally {
    viewer.close();
  }
}

function sshCat(sshd, file) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn("ssh", sshd.ssh("bench-host", `cat ${file}`), { stdio: ["ignore", "pipe", "ignore"] });
    let bytes = 0;
    child.stdout.on("data", (d) => (bytes += d.length));
    child.on("error", reject);
    child.on("close", () => resolve({ bytes, seconds: (performance.now() - start) / 1000 }));
  });
}

export async function run({ runs = 5, keys = 300, statusRuns = 10, throughputMiB = 50 } = {}) {
  if (!existsSync(SSHD)) throw new Error("no /usr/sbin/sshd (apt-get install openssh-server)");
  const ws = await tempWorkspace("hosts");
  const sshd = await startSshd(path.join(ws.dir));
  let daemon;
  try {
    daemon = await startDaemon(ws.home, ws.env);
    const client = daemon.client;
    await client.request("init", { projectRoot: ws.project });
    for (const name of ["one", "two"]) {
      await client.request("host_add", { name, transport: { kind: "ssh", destination: "bench-host", configFile: sshd.clientConfig, options: [] }, root: hostRoot(ws.dir, `host-${name}`) });
    }
    const file = path.join(ws.dir, "payload.txt");
    const line = `${"x".repeat(77)}\n`;
    writeFileSync(file, line.repeat(Math.ceil((throughputMiB * 2 ** 20) / line.length)));

    // Keystrokes.
    const keyAgent = await client.request("spawn", { projectRoot: ws.project, root: true, on: "one", command: "stty raw -echo; exec cat" }, { timeoutMs: 120_000 });
    own(keyAgent.agent.pid, { group: true });
    const p50 = { pu: [], ssh: [] };
    const p99 = { pu: [], ssh: [] };
    for (let r = 0; r < runs; r++) {
      const s = await viaSsh(sshd, keys);
      const p = await viaPu(ws.home, keyAgent.agentId, keys);
      p50.ssh.push(percentile(s, 0.5));
      p99.ssh.push(percentile(s, 0.99));
      p50.pu.push(percentile(p, 0.5));
      p99.pu.push(percentile(p, 0.99));
    }

    // Throughput: a fresh agent per run that cats the file on Enter.
    const rates = { pu: [], ssh: [] };
    for (let r = 0; r < Math.min(runs, 3); r++) {
      const s = await sshCat(sshd, file);
      rates.ssh.push(s.bytes / 2 ** 20 / s.seconds);
      const agent = await client.request("spawn", { projectRoot: ws.project, root: true, on: "one", command: `read x; exec cat ${file}` }, { timeoutMs: 120_000 });
      own(agent.agent.pid, { group: true });
      const p = await attachThroughput(ws.home, agent.agentId);
      rates.pu.push(p.bytes / 2 ** 20 / p.seconds);
    }

    // `pu status` with agents on one host, then on two.
    const statusOf = () => timeProcess([process.execPath, CLI_BIN, "status", "--json"], { env: { ...ws.env, PU_HOME: ws.home }, cwd: ws.project }).ms;
    const oneHost = [];
    for (let i = 0; i < statusRuns; i++) oneHost.push(statusOf());
    const second = await client.request("spawn", { projectRoot: ws.project, root: true, on: "two", command: "sleep 3600" }, { timeoutMs: 120_000 });
    own(second.agent.pid, { group: true });
    const twoHosts = [];
    for (let i = 0; i < statusRuns; i++) twoHosts.push(statusOf());

    // Reconnect after the link drops: the shared master exits, the daemon's ssh clients end with it.
    const reconnect = [];
    const fresh = [];
    const control = path.join(ws.home, "ssh", "one");
    for (let r = 0; r < runs; r++) {
      fresh.push(timeProcess(["ssh", ...sshd.ssh("bench-host", "true")]).ms);
      spawnSync("ssh", sshd.ssh("-o", `ControlPath=${control}`, "-O", "exit", "bench-host"), { stdio: "ignore" });
      const start = performance.now();
      // Wait for the drop to be seen, then for the link to be back (status asks the host each time).
      for (;;) {
        const report = await client.request("status", { projectRoot: ws.project, agentId: keyAgent.agentId });
        const agent = report.agents[keyAgent.agentId];
        if (agent?.hostState === "connected" && performance.now() - start > 0) {
          reconnect.push(performance.now() - start);
          break;
        }
        if (performance.now() - start > 60_000) throw new Error("the link did not come back within 60 s");
        await sleep(20);
      }
      await sleep(1500);
    }

    const ratio = (a, b) => summarize(a).median / summarize(b).median;
    return [
      ...[
        [p50, "p50"],
        [p99, "p99"],
      ].map(([q, label]) =>
        figure({
          id: `hosts.keystroke.${label}`,
          name: `Keystroke round trip ${label} to an agent on a host (local daemon → ssh → host daemon → PTY and back)`,
          unit: "ms",
          value: summarize(q.pu),
          reference: { name: "ssh -tt HOST 'stty raw -echo; exec cat'", unit: "ms", ...summarize(q.ssh) },
          ratio: ratio(q.pu, q.ssh),
          notes: `${runs} runs × ${keys} keystrokes; sshd on 127.0.0.1`,
        }),
      ),
      figure({
        id: "hosts.throughput",
        name: `Output throughput from an agent on a host to an attached viewer (${throughputMiB} MiB of 78-byte lines)`,
        unit: "MiB/s",
        value: summarize(rates.pu),
        reference: { name: "ssh HOST cat FILE", unit: "MiB/s", ...summarize(rates.ssh) },
        ratio: ratio(rates.pu, rates.ssh),
        notes: "pu's path: the host's PTY and screen model, its daemon, pu daemon stdio, ssh, the local daemon's relay, the viewer",
      }),
      figure({
        id: "hosts.status",
        name: "`pu status --json` with agents on two hosts (whole process)",
        unit: "ms",
        value: summarize(twoHosts),
        reference: { name: "the same with agents on one host", unit: "ms", ...summarize(oneHost) },
        ratio: ratio(twoHosts, oneHost),
        notes: `${statusRuns} runs each; each host asked in parallel over its shared connection`,
      }),
      figure({
        id: "hosts.reconnect",
        name: "Reconnect after the link drops (shared ssh master killed) until status reads the host connected",
        unit: "ms",
        value: summarize(reconnect),
        reference: { name: "a fresh ssh HOST true", unit: "ms", ...summarize(fresh) },
        ratio: ratio(reconnect, fresh),
        notes: "a link that was up is re-opened on the first request after it drops (backoff is for failed attempts only)",
      }),
    ];
  } finally {
    await daemon?.stop();
    // The hosts' daemons (started on demand through ssh) and their agents, by their pid files.
    for (const name of ["one", "two"]) await stopDaemonByPidFile(path.join(ws.dir, `host-${name}`, "home"));
    await sshd.stop();
    await ws.cleanup();
  }
}
