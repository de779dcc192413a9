// Figures: `pu dash` in a PTY (node-pty, 120×40) against a daemon holding 100 idle `sh` agents:
// start-up to the first full frame (the agent list and the keys line drawn), keypress to redraw
// (j/k alternately; time from the key to the next output), and the dashboard's own CPU while
// nothing happens. Reference for start-up: `pu status` (the table) as a whole process, same run.
import { spawnSync } from "node:child_process";
import { CLI_BIN, cpuSeconds, figure, isAlive, killOwned, loadPty, own, percentile, sleep, spawnAgent, startDaemon, summarize, tempWorkspace, timeProcess } from "./lib.mjs";

const AGENTS = 100;
const PRESSES = 60;
const IDLE_SECONDS = 10;

/** The dashboard's own process: the child of `pu dash` running dist/dash/main.js. */
function dashPid(launcherPid) {
  const r = spawnSync("pgrep", ["-P", String(launcherPid)], { encoding: "utf8" });
  return Number(r.stdout.trim().split("\n")[0]);
}

async function oneRun(pty) {
  const ws = await tempWorkspace("dash");
  let daemon;
  let term;
  try {
    daemon = await startDaemon(ws.home, { ...ws.env, PS1: "$ ", ENV: "" });
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    for (let i = 0; i < AGENTS; i++) await spawnAgent(client, { projectRoot: ws.project, root: true, command: "sh", name: `sh-${i}` });
    await sleep(1000);
    const env = { ...ws.env, PS1: "$ ", ENV: "" };
    const statusMs = [];
    for (let i = 0; i < 5; i++) statusMs.push(timeProcess([process.execPath, CLI_BIN, "status"], { env, cwd: ws.project }).ms);

    let output = "";
    let lastOutputAt = 0;
    const t0 = performance.now();
    term = pty.spawn(process.execPath, [CLI_BIN, "dash", "--no-bell"], { name: "xterm-256color", cols: 120, rows: 40, cwd: ws.project, env, encoding: "utf8" });
    own(term.pid, { group: true });
    let firstFrameMs;
    const frame = new Promise((resolve) => {
      term.onData((data) => {
        output += data;
        lastOutputAt = performance.now();
        if (firstFrameMs === undefined && output.includes("q quit") && output.includes("sh-0")) {
          firstFrameMs = lastOutputAt - t0;
          resolve();
        }
      });
    });
    await Promise.race([frame, sleep(30_000)]);
    if (firstFrameMs === undefined) throw new Error(`pu dash drew no frame in 30 s: ${output.slice(-300)}`);
    await sleep(1500);

    const redraws = [];
    for (let i = 0; i < PRESSES; i++) {
      const before = output.length;
      const sent = performance.now();
      term.write(i % 2 === 0 ? "j" : "k");
      const deadline = sent + 5000;
      while (output.length === before && performance.now() < deadline) await sleep(1);
      redraws.push(lastOutputAt - sent);
      await sleep(50);
    }

    const pid = dashPid(term.pid);
    await sleep(1000);
    const cpu0 = cpuSeconds(pid);
    const w0 = performance.now();
    await sleep(IDLE_SECONDS * 1000);
    const idleCpu = ((cpuSeconds(pid) - cpu0) / ((performance.now() - w0) / 1000)) * 100;
    term.write("q");
    await sleep(500);
    const sorted = [...redraws].sort((a, b) => a - b);
    return { firstFrameMs, statusMs: summarize(statusMs).median, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), idleCpu };
  } finally {
    if (term && isAlive(term.pid)) await killOwned(term.pid);
    await daemon?.client.request("kill", { projectRoot: ws.project, target: "all" }, { timeoutMs: 120_000 }).catch(() => undefined);
    await daemon?.stop();
    await ws.cleanup();
  }
}

export async function run({ runs = 3 } = {}) {
  const pty = loadPty();
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await oneRun(pty));
  const start = summarize(results.map((x) => x.firstFrameMs));
  const status = summarize(results.map((x) => x.statusMs));
  return [
    figure({
      id: "dash.first_frame",
      name: `\`pu dash\` start-up to the first full frame (${AGENTS} agents, 120×40 PTY)`,
      unit: "ms",
      value: start,
      reference: { name: "`pu status` (the table), whole process", unit: "ms", ...status },
      ratio: start.median / status.median,
      notes: `${runs} runs; the dashboard is its own Node process (Ink, React) started by pu dash`,
    }),
    figure({
      id: "dash.keypress_p50",
      name: "`pu dash` keypress → redraw p50 (j/k moving the selection)",
      unit: "ms",
      value: summarize(results.map((x) => x.p50)),
      notes: `${PRESSES} presses per run; from the key written to the PTY to the last output byte of the redraw`,
    }),
    figure({
      id: "dash.keypress_p99",
      name: "`pu dash` keypress → redraw p99",
      unit: "ms",
      value: summarize(results.map((x) => x.p99)),
    }),
    figure({
      id: "dash.idle_cpu",
      name: `\`pu dash\` CPU at idle with ${AGENTS} agents (${IDLE_SECONDS} s window)`,
      unit: "% of a core",
      value: summarize(results.map((x) => x.idleCpu)),
      target: "< 1% of a core",
      met: summarize(results.map((x) => x.idleCpu)).median < 1,
    }),
  ];
}
