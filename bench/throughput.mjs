// Figure 1: output throughput. One agent `cat`s a large file; how fast do its
// bytes reach a viewer? Three hosts for the same program on the same file:
//   pu      — the daemon owns the PTY; a client attached with openStream('attach') counts bytes
//   direct  — node-pty in this process, same options as the daemon (raw Buffers)
//   tmux    — tmux owns the PTY; `pipe-pane -O` feeds a byte counter process
// Each program first blocks on `read`, so timing starts when Enter is sent and
// ends when the last byte reaches the consumer; every host sees the same bytes.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, openSync, closeSync, writeSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import {
  CLI_BIN,
  REPO,
  connect,
  cpuSeconds,
  figure,
  isAlive,
  killOwned,
  loadPty,
  machineBusySeconds,
  own,
  disown,
  sleep,
  spawnAgent,
  startDaemon,
  summarize,
  tempWorkspace,
} from "./lib.mjs";

const COLS = 120;
const ROWS = 40;
/** Lets the shell reach `read` before the clock starts (not part of any measurement). */
const SETTLE_MS = 300;
const clock = () => performance.timeOrigin + performance.now();

/**
 * The two line shapes every host is measured on: short lines (log-like output) and 1 KiB
 * lines (minified or wide output). A PTY turns each \n into \r\n, the same for every host;
 * the shape moves the direct reader's speed, so each shape has its own reference.
 */
const LINE_SHAPES = [
  { id: "", name: "80-byte lines", line: "pu benchmark output line: the quick brown fox jumps over the lazy dog 0123456\n" },
  { id: ".kib_lines", name: "1 KiB lines", line: `${"pu benchmark wide output 0123456789 abcdefghijklmnopqrstuvwxyz ".repeat(16).slice(0, 1023)}\n` },
];

function writeBigFile(file, megabytes, line) {
  const block = Buffer.from(line.repeat(Math.floor((1024 * 1024) / line.length)));
  const fd = openSync(file, "w");
  try {
    let written = 0;
    while (written < megabytes * 1024 * 1024) written += writeSync(fd, block);
  } finally {
    closeSync(fd);
  }
  return statSync(file).size;
}

async function viaDirectPty(pty, cwd, script) {
  const term = pty.spawn("/bin/sh", ["-c", script], { name: "xterm-256color", cols: COLS, rows: ROWS, cwd, env: process.env, encoding: null });
  own(term.pid, { group: true });
  try {
    let bytes = 0;
    let lastByteAt = 0;
    term.onData((data) => {
      bytes += data.length;
      lastByteAt = clock();
    });
    const exited = new Promise((resolve) => term.onExit(resolve));
    await sleep(SETTLE_MS);
    const start = clock();
    term.write("\n");
    await exited;
    // node-pty may report the exit before the last read is delivered: wait for quiet.
    let seen = -1;
    while (seen !== bytes) {
      seen = bytes;
      await sleep(50);
    }
    return { bytes, seconds: (lastByteAt - start) / 1000 };
  } finally {
    if (isAlive(term.pid)) await killOwned(term.pid);
    disown(term.pid);
  }
}

async function viaDaemon(daemon, ws, script) {
  const { agentId, agent } = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: script, cols: COLS, rows: ROWS });
  const viewer = await connect(ws.home, "pu-bench-viewer");
  try {
    const stream = await viewer.openStream("attach", { agentId });
    let bytes = 0;
    let skipped = 0;
    let lastByteAt = 0;
    let exitCode = null;
    const consumed = (async () => {
      for await (const event of stream) {
        if (event.type === "output") {
          bytes += event.data.length;
          lastByteAt = clock();
        } else if (event.type === "notice") {
          skipped += event.skippedBytes ?? 0;
        } else if (event.type === "exit") {
          exitCode = event.exitCode;
          break;
        }
      }
    })();
    await sleep(SETTLE_MS);
    const cpuBefore = cpuSeconds(daemon.pid);
    const start = clock();
    await stream.request("input", { agentId, data: Buffer.from("\n") });
    await consumed;
    const daemonCpu = cpuSeconds(daemon.pid) - cpuBefore;
    if (exitCode !== 0) throw new Error(`agent ${agentId} exited with ${exitCode}`);
    return { bytes, skipped, daemonCpu, seconds: (lastByteAt - start) / 1000 };
  } finally {
    viewer.close();
    if (isAlive(agent.pid)) await killOwned(agent.pid);
    disown(agent.pid);
  }
}

/**
 * The daemon with nothing attached: from Enter to the agent's exit (cat has then written its
 * last byte into the PTY, and the daemon has read all but what the kernel still holds). Tells
 * the daemon's own reading of the PTY from the delivery to a consumer.
 */
async function viaDaemonUnwatched(daemon, ws, script) {
  const { agentId, agent } = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: script, cols: COLS, rows: ROWS });
  try {
    await sleep(SETTLE_MS);
    const start = clock();
    await daemon.client.request("input", { agentId, data: Buffer.from("\n") });
    while (isAlive(agent.pid)) await sleep(2);
    return { seconds: (clock() - start) / 1000 };
  } finally {
    if (isAlive(agent.pid)) await killOwned(agent.pid);
    disown(agent.pid);
  }
}

/**
 * Runs `measure` beside a process of no concern to it that keeps a quarter of one core busy
 * (1 ms of work every 4 ms): how much the PTY pipeline (cat, the kernel's tty worker, the
 * reader) loses on this 2-core machine to CPU taken at moments it does not choose.
 */
async function besideQuarterCoreLoad(measure) {
  const burn = "const s = new Int32Array(new SharedArrayBuffer(4)); for (;;) { const t = performance.now(); while (performance.now() - t < 1); Atomics.wait(s, 0, 0, 3); }";
  const burner = spawn(process.execPath, ["-e", burn], { stdio: "ignore" });
  own(burner.pid);
  try {
    await sleep(100);
    return await measure();
  } finally {
    await killOwned(burner.pid);
    disown(burner.pid);
  }
}

/** The real CLI as the consumer: `pu logs --follow` writing to a pipe this process drains. */
async function viaCliFollow(daemon, ws, script) {
  const { agentId, agent } = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: script, cols: COLS, rows: ROWS });
  const nodeArgs = (process.env.PU_BENCH_CLI_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const cli = spawn(process.execPath, [...nodeArgs, CLI_BIN, "logs", agentId, "--follow"], { env: { ...process.env, PU_HOME: ws.home }, stdio: ["ignore", "pipe", "pipe"] });
  own(cli.pid);
  try {
    let bytes = 0;
    let lastByteAt = 0;
    let stderr = "";
    cli.stdout.on("data", (chunk) => {
      bytes += chunk.length;
      lastByteAt = clock();
    });
    cli.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => cli.once("exit", resolve));
    // The follower is attached once it has printed the agent's (empty) start or after a moment.
    await sleep(SETTLE_MS * 3);
    const cpuBefore = cpuSeconds(daemon.pid);
    const start = clock();
    await daemon.client.request("input", { agentId, data: Buffer.from("\n") });
    const code = await exited;
    if (code !== 0) throw new Error(`pu logs --follow exited with ${code}: ${stderr.slice(-300)}`);
    return { bytes, seconds: (lastByteAt - start) / 1000, daemonCpu: cpuSeconds(daemon.pid) - cpuBefore };
  } finally {
    if (isAlive(cli.pid)) await killOwned(cli.pid);
    disown(cli.pid);
    if (isAlive(agent.pid)) await killOwned(agent.pid);
    disown(agent.pid);
  }
}

/**
 * The same hops as the daemon and `pu logs --follow`, with nothing of pu's in them: node-pty
 * read in a process of its own that writes to a pipe, then (with `forward`) a second Node
 * process copying that pipe to the one this process drains. What these lose against the
 * direct reader is what the 2-core machine charges for the extra processes and copies.
 */
async function viaRelayedPty(cwd, script, { forward }) {
  const relay = path.join(REPO, "bench/pty-relay.mjs");
  // The script travels as an argument ($1), never as shell text.
  const pipeline = forward ? `exec "$0" "$1" read "$2" | exec "$0" "$1" forward` : `exec "$0" "$1" read "$2"`;
  const chain = spawn("/bin/sh", ["-c", pipeline, process.execPath, relay, script], { cwd, detached: true, stdio: ["pipe", "pipe", "inherit"] });
  own(chain.pid, { group: true });
  try {
    let bytes = 0;
    let lastByteAt = 0;
    chain.stdout.on("data", (chunk) => {
      bytes += chunk.length;
      lastByteAt = clock();
    });
    const exited = new Promise((resolve) => chain.once("exit", resolve));
    await sleep(SETTLE_MS * 3);
    const start = clock();
    chain.stdin.write("\n");
    const code = await exited;
    if (code !== 0) throw new Error(`the relay chain exited with ${code}`);
    return { bytes, seconds: (lastByteAt - start) / 1000 };
  } finally {
    if (isAlive(chain.pid)) await killOwned(chain.pid);
    disown(chain.pid);
  }
}

/** A run with the machine's busy CPU over it, what 2 cores could give in that time, and this process's (the reader's) own. */
async function withCpu(measure) {
  const machineBefore = machineBusySeconds();
  const own = process.cpuUsage();
  const started = clock();
  const result = await measure();
  const used = process.cpuUsage(own);
  return { ...result, cpu: { machine: machineBusySeconds() - machineBefore, available: (2 * (clock() - started)) / 1000, reader: (used.user + used.system) / 1e6 } };
}

function tmux(sock, ...args) {
  const r = spawnSync("tmux", ["-S", sock, "-f", "/dev/null", ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

async function viaTmux(dir, script, run) {
  const sock = path.join(dir, `tmux-${run}.sock`);
  const out = path.join(dir, `tmux-${run}.count.json`);
  const counter = path.join(REPO, "bench/count-bytes.mjs");
  tmux(sock, "new-session", "-d", "-s", "bench", "-x", String(COLS), "-y", String(ROWS), script);
  let serverPid, panePid;
  try {
    serverPid = Number(tmux(sock, "display-message", "-p", "-t", "bench", "#{pid}"));
    own(serverPid);
    panePid = Number(tmux(sock, "display-message", "-p", "-t", "bench", "#{pane_pid}"));
    own(panePid, { group: true });
  } catch (err) {
    // The server is ours even when asking for its pids failed: stop it through its socket.
    spawnSync("tmux", ["-S", sock, "kill-server"]);
    throw err;
  }
  try {
    tmux(sock, "pipe-pane", "-O", "-t", "bench", `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(counter)} ${JSON.stringify(out)}`);
    await sleep(SETTLE_MS);
    const start = clock();
    tmux(sock, "send-keys", "-t", "bench", "Enter");
    const deadline = Date.now() + 180_000;
    while (!existsSync(out)) {
      if (Date.now() > deadline) throw new Error("tmux run did not finish within 180 s");
      await sleep(5);
    }
    const { bytes, lastByteAt } = JSON.parse(readFileSync(out, "utf8"));
    return { bytes, seconds: (lastByteAt - start) / 1000 };
  } finally {
    for (const pid of [panePid, serverPid]) {
      if (isAlive(pid)) await killOwned(pid);
      disown(pid);
    }
  }
}

export async function run({ runs = 3, megabytes = 200 } = {}) {
  const figures = [];
  for (const shape of LINE_SHAPES) figures.push(...(await runShape(shape, { runs, megabytes })));
  figures.push(await runOldSpaceFloor({ runs, megabytes }));
  return figures;
}

/** Floods a daemon takes before it is measured: enough for its old generation to reach where V8's limit stood without the floor. */
const FLOOR_WARM_FLOODS = 3;

/**
 * What the daemon's old-space floor (`--initial-old-space-size`, @pu/core/daemon-process) is for:
 * two daemons side by side, one started as pu starts it and one with the floor taken back
 * (`--initial-old-space-size=0`, a later flag wins), each through FLOOR_WARM_FLOODS floods first
 * (a daemon that has lived a while), then flooded in turn (1 KiB lines to `pu logs --follow`).
 * Both run with `--trace-gc` into their log, which counts their full collections per flood.
 */
async function runOldSpaceFloor({ runs, megabytes }) {
  const shape = LINE_SHAPES[1];
  const places = { shipped: await tempWorkspace("floor-on"), without: await tempWorkspace("floor-off") };
  const daemons = {};
  try {
    const file = path.join(places.shipped.dir, "big.txt");
    writeBigFile(file, megabytes, shape.line);
    const script = `read x; exec cat ${file}`;
    daemons.shipped = await startDaemon(places.shipped.home, process.env, ["--trace-gc"]);
    daemons.without = await startDaemon(places.without.home, process.env, ["--trace-gc", "--initial-old-space-size=0"]);
    const fullCollections = (name) => (readFileSync(path.join(places[name].home, "bench-daemon.stderr"), "utf8").match(/Mark-Compact/g) ?? []).length;
    for (const name of ["shipped", "without"]) await daemons[name].client.request("init", { projectRoot: places[name].project });
    for (let i = 0; i < FLOOR_WARM_FLOODS; i++) for (const name of ["shipped", "without"]) await viaCliFollow(daemons[name], places[name], script);
    const rates = { shipped: [], without: [] };
    const collections = { shipped: [], without: [] };
    for (let r = 0; r < runs; r++) {
      for (const name of r % 2 ? ["without", "shipped"] : ["shipped", "without"]) {
        const before = fullCollections(name);
        const c = await viaCliFollow(daemons[name], places[name], script);
        rates[name].push(c.bytes / c.seconds / 1e6);
        collections[name].push(fullCollections(name) - before);
      }
    }
    const shipped = summarize(rates.shipped);
    const without = summarize(rates.without);
    return figure({
      id: "throughput.old_space_floor",
      name: `Output throughput (1 KiB lines) → \`pu logs --follow\`, a daemon after ${FLOOR_WARM_FLOODS} earlier floods, started as pu starts it (old-space floor)`,
      unit: "MB/s",
      value: shipped,
      reference: { name: "the same daemon without the floor (--initial-old-space-size=0)", unit: "MB/s", ...without },
      ratio: shipped.median / without.median,
      notes: `full collections per flood (--trace-gc): with the floor ${collections.shipped.join("/")}, without ${collections.without.join("/")}`,
    });
  } finally {
    for (const daemon of Object.values(daemons)) await daemon.stop();
    for (const ws of Object.values(places)) await ws.cleanup();
  }
}

async function runShape(shape, { runs, megabytes }) {
  const ws = await tempWorkspace("throughput");
  let daemon;
  try {
    const file = path.join(ws.dir, "big.txt");
    const fileBytes = writeBigFile(file, megabytes, shape.line);
    const script = `read x; exec cat ${file}`;
    const pty = loadPty();
    daemon = await startDaemon(ws.home);
    await daemon.client.request("init", { projectRoot: ws.project });

    const rates = { direct: [], pu: [], cli: [], tmux: [], relay: [], relayForward: [], loaded: [], unwatched: [] };
    const bytesSeen = { direct: [], pu: [], cli: [], tmux: [], relay: [], relayForward: [], loaded: [] };
    const skippedBytes = [];
    const daemonCpu = [];
    const cpuSplit = [];
    for (let r = 0; r < runs; r++) {
      // Where the two cores went: the whole machine's busy CPU per run, and the bench's own share
      // (the reader: node-pty directly, or the attached viewer).
      const d = await withCpu(() => viaDirectPty(pty, ws.project, script));
      const p = await withCpu(() => viaDaemon(daemon, ws, script));
      cpuSplit.push({ direct: d.cpu, pu: { ...p.cpu, daemon: p.daemonCpu } });
      const c = await viaCliFollow(daemon, ws, script);
      const t = await viaTmux(ws.dir, script, r);
      const relay = await viaRelayedPty(ws.project, script, { forward: false });
      const relayForward = await viaRelayedPty(ws.project, script, { forward: true });
      const loaded = await besideQuarterCoreLoad(() => viaDirectPty(pty, ws.project, script));
      const unwatched = await viaDaemonUnwatched(daemon, ws, script);
      for (const [k, v] of Object.entries({ direct: d, pu: p, cli: c, tmux: t, relay, relayForward, loaded })) {
        rates[k].push(v.bytes / v.seconds / 1e6);
        bytesSeen[k].push(v.bytes);
      }
      rates.unwatched.push(fileBytes / unwatched.seconds / 1e6);
      skippedBytes.push(p.skipped);
      daemonCpu.push(p.daemonCpu);
    }
    const pu = summarize(rates.pu);
    const direct = summarize(rates.direct);
    const tm = summarize(rates.tmux);
    const cli = summarize(rates.cli);
    const ratio = pu.median / direct.median;
    const cliRatio = cli.median / direct.median;
    const relay = summarize(rates.relay);
    const relayForward = summarize(rates.relayForward);
    const loaded = summarize(rates.loaded);
    const unwatched = summarize(rates.unwatched);
    /** A figure with no target of its own, beside the direct reader of the same run. */
    const besideDirect = (id, name, value, notes) =>
      figure({ id: `throughput.${id}${shape.id}`, name: `Output throughput (${shape.name}): ${name}`, unit: "MB/s", value, reference: { name: "node-pty read directly", unit: "MB/s", ...direct }, ratio: value.median / direct.median, notes });
    const note =
      `${fileBytes} bytes in the file; bytes delivered per run: pu ${bytesSeen.pu.join("/")}, pu logs --follow ${bytesSeen.cli.join("/")}, ` +
      `direct ${bytesSeen.direct.join("/")}, tmux ${bytesSeen.tmux.join("/")}, ` +
      `relays ${bytesSeen.relay.join("/")} and ${bytesSeen.relayForward.join("/")}, direct beside a load ${bytesSeen.loaded.join("/")}; ` +
      `bytes the pu viewer skipped (fell behind the ring): ${skippedBytes.join("/")}; ` +
      `daemon CPU per run (screen model included): ${daemonCpu.map((c) => `${c.toFixed(2)} s`).join("/")}; ` +
      `CPU per run, of 2 cores × wall time: ${cpuSplit.map(({ direct, pu }) => `direct ${direct.machine.toFixed(2)}/${direct.available.toFixed(2)} s (reader ${direct.reader.toFixed(2)}), pu ${pu.machine.toFixed(2)}/${pu.available.toFixed(2)} s (daemon ${pu.daemon.toFixed(2)}, viewer ${pu.reader.toFixed(2)})`).join("; ")}`;
    return [
      figure({
        id: `throughput.pu_vs_direct${shape.id}`,
        name: `Output throughput (${shape.name}): cat ${megabytes} MiB via daemon (screen model on) → attached viewer`,
        unit: "MB/s",
        value: pu,
        reference: { name: "node-pty read directly", unit: "MB/s", ...direct },
        ratio,
        target: "≥ 0.8× direct node-pty",
        met: ratio >= 0.8,
        notes: note,
      }),
      figure({
        id: `throughput.cli_follow_vs_direct${shape.id}`,
        name: `Output throughput (${shape.name}): same cat via daemon → \`pu logs --follow\` (the CLI) writing to a pipe`,
        unit: "MB/s",
        value: cli,
        reference: { name: "node-pty read directly", unit: "MB/s", ...direct },
        ratio: cliRatio,
        target: "≥ 0.8× direct node-pty",
        met: cliRatio >= 0.8,
        notes:
          "the pipe is drained by the bench process as fast as it can read; " +
          `the same hops without pu (node-pty in a process of its own → pipe → a Node process copying it → pipe): ` +
          `${relayForward.median.toFixed(1)} MB/s (${(relayForward.median / direct.median).toFixed(2)}× direct; pu logs --follow is ${(cli.median / relayForward.median).toFixed(2)}× of it); ` +
          `one hop (node-pty in its own process → pipe): ${relay.median.toFixed(1)} MB/s (${(relay.median / direct.median).toFixed(2)}× direct)`,
      }),
      besideDirect("relay_vs_direct", "same cat with no pu, the same hops as pu logs --follow (node-pty in one process → pipe → Node copy → pipe)", relayForward, `what two extra processes and pipes cost on this machine; one extra process: ${relay.median.toFixed(1)} MB/s (${(relay.median / direct.median).toFixed(2)}×)`),
      besideDirect("daemon_unwatched", "same cat via daemon with nothing attached (Enter → the agent's exit)", unwatched, "the daemon's own reading of the PTY (ring, screen model, activity) without a consumer: the file's bytes over the time to the exit"),
      besideDirect("direct_beside_load", "node-pty read directly beside an unrelated process using a quarter of one core", loaded, "1 ms of busy work every 4 ms in a process of its own: what CPU taken at moments the PTY pipeline does not choose costs it on this machine"),
      besideDirect("tmux", "same cat with tmux as host (pipe-pane -O → byte counter)", tm, `pu / tmux = ${(pu.median / tm.median).toFixed(2)}×`),
    ];
  } finally {
    await daemon?.stop();
    await ws.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 3), megabytes: Number(process.env.MB ?? 200) });
  console.log(JSON.stringify(rows, null, 2));
}
