// Figure 2: keystroke round trip. One byte goes in as an `input` request on an
// attach stream; the clock stops when the agent's echo of it arrives on the same
// stream. The agent is `stty raw -echo; exec cat`, so the echo really is the
// program reading the byte and writing it back (not the tty line discipline).
// Reference: the same program under node-pty in this process, write → onData.
import {
  connect,
  echoWaiter,
  figure,
  isAlive,
  killOwned,
  loadPty,
  own,
  disown,
  percentile,
  sleep,
  spawnAgent,
  startDaemon,
  summarize,
  tempWorkspace,
} from "./lib.mjs";

const SCRIPT = "stty raw -echo; exec cat";
const KEYS = "abcdefghijklmnopqrstuvwxyz";

/** Sends `count` single bytes one after another; returns each round trip in ms. */
async function roundTrips(count, send, nextEcho) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const key = KEYS[i % KEYS.length];
    const echoed = nextEcho(key);
    const start = performance.now();
    send(key);
    await echoed;
    times.push(performance.now() - start);
  }
  return times;
}

async function direct(pty, cwd, count) {
  const term = pty.spawn("/bin/sh", ["-c", SCRIPT], { name: "xterm-256color", cols: 120, rows: 40, cwd, env: process.env, encoding: null });
  own(term.pid, { group: true });
  try {
    const echo = echoWaiter();
    term.onData((data) => echo.seen(data.toString("latin1")));
    // Wait until stty has run: a probe byte must come back exactly once.
    await sleep(300);
    const probe = echo.expect("!");
    term.write("!");
    await probe;
    return await roundTrips(count, (k) => term.write(k), (k) => echo.expect(k));
  } finally {
    if (isAlive(term.pid)) await killOwned(term.pid);
    disown(term.pid);
  }
}

async function viaDaemon(daemon, ws, count) {
  const { agentId, agent } = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: SCRIPT });
  const viewer = await connect(ws.home, "pu-bench-keys");
  try {
    const stream = await viewer.openStream("attach", { agentId });
    const echo = echoWaiter();
    const consumed = (async () => {
      for await (const event of stream) {
        if (event.type === "output") echo.seen(Buffer.from(event.data).toString("latin1"));
        if (event.type === "exit") break;
      }
    })();
    await sleep(300);
    const probe = echo.expect("!");
    await stream.request("input", { agentId, data: Buffer.from("!") });
    await probe;
    // Like `pu attach`: keys are sent without waiting for the input reply; the echo is what counts.
    const send = (k) => void stream.request("input", { agentId, data: Buffer.from(k) }).catch(() => undefined);
    const times = await roundTrips(count, send, (k) => echo.expect(k));
    stream.close();
    await consumed;
    return times;
  } finally {
    viewer.close();
    if (isAlive(agent.pid)) await killOwned(agent.pid);
    disown(agent.pid);
  }
}

export async function run({ runs = 5, keystrokes = 500 } = {}) {
  const ws = await tempWorkspace("keys");
  let daemon;
  try {
    const pty = loadPty();
    daemon = await startDaemon(ws.home);
    await daemon.client.request("init", { projectRoot: ws.project });
    const p50 = { pu: [], direct: [] };
    const p99 = { pu: [], direct: [] };
    for (let r = 0; r < runs; r++) {
      const d = (await direct(pty, ws.project, keystrokes)).sort((a, b) => a - b);
      const p = (await viaDaemon(daemon, ws, keystrokes)).sort((a, b) => a - b);
      p50.direct.push(percentile(d, 0.5));
      p99.direct.push(percentile(d, 0.99));
      p50.pu.push(percentile(p, 0.5));
      p99.pu.push(percentile(p, 0.99));
    }
    const rows = [];
    for (const [q, label] of [
      [p50, "p50"],
      [p99, "p99"],
    ]) {
      const pu = summarize(q.pu);
      const ref = summarize(q.direct);
      rows.push(
        figure({
          id: `keystroke.${label}`,
          name: `Keystroke round trip ${label} (input on attach stream → echo on stream)`,
          unit: "ms",
          value: pu,
          reference: { name: "node-pty write → onData", unit: "ms", ...ref },
          ratio: pu.median / ref.median,
          notes: `${runs} runs × ${keystrokes} keystrokes; value = median over runs of each run's ${label}`,
        }),
      );
    }
    return rows;
  } finally {
    await daemon?.stop();
    await ws.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 5), keystrokes: Number(process.env.KEYS ?? 500) });
  for (const r of rows) console.log(r.id, r.value.median.toFixed(3), r.reference.median.toFixed(3), r.ratio.toFixed(2), JSON.stringify(r.value.samples.map((x) => +x.toFixed(3))));
}
