// Round trips per second of pu-ipc (client.request → server handler → ok reply) next to a
// bare Node Unix-socket ping-pong of length-prefixed raw bytes of the same sizes, in the
// same run. As with the CLI and the daemon, servers run in a child process and clients
// here; the ratio shows what framing, msgpack, validation and request bookkeeping cost.
// Run: `pnpm build && node bench/ipc.mjs` (PU_BENCH_IPC_MESSAGES overrides the count).
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fork } from "node:child_process";

const dist = new URL("../packages/pu-ipc/dist/", import.meta.url);
const { createServer } = await import(new URL("server.js", dist).href);
const { connectClient } = await import(new URL("client.js", dist).href);
const { encodeFrame } = await import(new URL("frame.js", dist).href);

const MESSAGES = Number(process.env.PU_BENCH_IPC_MESSAGES ?? 5000);
const RUNS = 5;
const WARMUP = 3000;
const TARGET_RATIO = 0.7;
const SERVE_FLAG = "--serve";

const healthResult = {
  pid: process.pid,
  uptimeSeconds: 1,
  protocolVersion: 1,
  daemonVersion: "0.1.0",
  home: "/home/user/.pu",
  agentCount: 0,
  liveAgentCount: 0,
  projects: [],
};

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const SLICE = 250;

/** Seconds spent on `count` sequential round trips. */
async function timeSlice(count, roundTrip) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await roundTrip();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Both servers, run in a child process as the daemon is. */
async function serveInChild(ipcPath, barePath, replyBytes) {
  const server = createServer({ socketPath: ipcPath, handlers: { health: async () => healthResult } });
  await server.listen();
  const reply = Buffer.concat([Buffer.alloc(4), replyBytes]);
  reply.writeUInt32BE(replyBytes.length, 0);
  const bare = createNetServer((socket) => onRawFrames(socket, () => socket.write(reply)));
  await new Promise((resolve) => bare.listen(barePath, resolve));
}

/** Calls onFrame once per complete length-prefixed frame; the bare side's whole protocol. */
function onRawFrames(socket, onFrame) {
  let pending = Buffer.alloc(0);
  socket.on("data", (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
      pending = pending.subarray(4 + pending.readUInt32BE(0));
      onFrame();
    }
  });
}

async function puIpcClient(socketPath) {
  const client = await connectClient({ socketPath, clientName: "bench" });
  return { roundTrip: () => client.request("health", {}), stop: () => client.close() };
}

async function bareClient(socketPath, requestBytes) {
  const request = Buffer.concat([Buffer.alloc(4), requestBytes]);
  request.writeUInt32BE(requestBytes.length, 0);
  const socket = createConnection(socketPath);
  await new Promise((resolve) => socket.once("connect", resolve));
  let waiting;
  onRawFrames(socket, () => waiting());
  return {
    roundTrip: () =>
      new Promise((resolve) => {
        waiting = resolve;
        socket.write(request);
      }),
    stop: () => socket.destroy(),
  };
}

/**
 * One run: a fresh server process; both clients take turns in short slices until each has
 * done MESSAGES round trips, so load from other processes on a shared machine falls on both alike.
 */
async function measureRun(requestBody, replyBody) {
  const dir = await mkdtemp(join(tmpdir(), "pu-bench-ipc-"));
  const ipcPath = join(dir, "ipc.sock");
  const barePath = join(dir, "bare.sock");
  const child = fork(fileURLToPath(import.meta.url), [SERVE_FLAG, ipcPath, barePath, replyBody.toString("base64")], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  try {
    await new Promise((resolve, reject) => {
      child.once("message", resolve);
      child.once("exit", (code) => reject(new Error(`bench server exited with ${code}`)));
    });
    const ipc = await puIpcClient(ipcPath);
    const bare = await bareClient(barePath, requestBody);
    await timeSlice(WARMUP, ipc.roundTrip);
    await timeSlice(WARMUP, bare.roundTrip);
    let ipcSeconds = 0;
    let bareSeconds = 0;
    for (let done = 0; done < MESSAGES; done += SLICE) {
      const count = Math.min(SLICE, MESSAGES - done);
      ipcSeconds += await timeSlice(count, ipc.roundTrip);
      bareSeconds += await timeSlice(count, bare.roundTrip);
    }
    ipc.stop();
    bare.stop();
    return { ipc: MESSAGES / ipcSeconds, bare: MESSAGES / bareSeconds };
  } finally {
    child.removeAllListeners("exit");
    child.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run() {
  // Bare messages as big as pu's: the encoded request and reply bodies.
  const requestBody = encodeFrame({ type: "health", id: 1000 }).subarray(4);
  const replyBody = encodeFrame({ type: "ok", id: 1000, result: healthResult }).subarray(4);
  const ipc = [];
  const bare = [];
  for (let i = 0; i < RUNS; i++) {
    const rates = await measureRun(requestBody, replyBody);
    ipc.push(rates.ipc);
    bare.push(rates.bare);
  }
  const ipcRate = median(ipc);
  const bareRate = median(bare);
  return {
    name: "ipc",
    figures: [
      {
        label: `pu-ipc request round trips (median of ${RUNS} × ${MESSAGES})`,
        value: Math.round(ipcRate),
        unit: "req/s",
        reference: Math.round(bareRate),
        ratio: Number((ipcRate / bareRate).toFixed(3)),
        samples: ipc,
        referenceSamples: bare,
      },
      {
        label: `bare Unix-socket ping-pong (median of ${RUNS} × ${MESSAGES})`,
        value: Math.round(bareRate),
        unit: "msg/s",
        samples: bare,
      },
    ],
  };
}

if (process.argv[2] === SERVE_FLAG) {
  const [ipcPath, barePath, reply] = process.argv.slice(3);
  await serveInChild(ipcPath, barePath, Buffer.from(reply, "base64"));
  process.send("ready");
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const result = await run();
  for (const figure of result.figures) console.log(`${figure.label}: ${figure.value} ${figure.unit}`);
  const ratio = result.figures[0].ratio;
  console.log(`ratio pu-ipc / bare: ${ratio} (target ≥ ${TARGET_RATIO})${ratio >= TARGET_RATIO ? "" : "  BELOW TARGET"}`);
}
