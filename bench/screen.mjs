// Figure: agents with screen models at rest. Each run gets a fresh project and daemon,
// measures the daemon's RSS with no agents, spawns N interactive `sh` agents at the
// project root (each draws its prompt, which its screen model parses), checks that
// `status` shows every prompt as the agent's last screen line, then samples the
// daemon's CPU over an idle window and its RSS. The screen models' own share of
// that memory is measured apart, in a separate Node process (bench/screen-memory.mjs).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { REPO, cpuSeconds, figure, isAlive, killOwned, rssBytes, sleep, spawnAgent, startDaemon, summarize, tempWorkspace } from "./lib.mjs";

const SETTLE_MS = 2000;

async function oneRun({ agents, idleSeconds }) {
  const ws = await tempWorkspace("screen");
  let daemon;
  const pids = [];
  try {
    // A plain `$ ` prompt, whatever the machine's sh would print.
    daemon = await startDaemon(ws.home, { ...process.env, PS1: "$ ", ENV: "" });
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    await sleep(500);
    const rssEmpty = rssBytes(daemon.pid);
    for (let i = 0; i < agents; i++) {
      const r = await spawnAgent(client, { projectRoot: ws.project, root: true, command: "sh", name: `sh-${i}` });
      pids.push(r.agent.pid);
    }
    await sleep(SETTLE_MS);
    const report = await client.request("status", { projectRoot: ws.project });
    const prompts = Object.values(report.agents).filter((a) => a.live && a.lastScreenLine === "$").length;
    if (prompts !== agents) throw new Error(`status shows the prompt as the last screen line of ${prompts} agents, expected ${agents}`);

    const cpu0 = cpuSeconds(daemon.pid);
    const t0 = performance.now();
    await sleep(idleSeconds * 1000);
    const cpu1 = cpuSeconds(daemon.pid);
    const idleCpuPercent = ((cpu1 - cpu0) / ((performance.now() - t0) / 1000)) * 100;
    const rss = rssBytes(daemon.pid);
    await client.request("kill", { projectRoot: ws.project, target: "all" }, { timeoutMs: 120_000 });
    return { idleCpuPercent, rssPerAgent: (rss - rssEmpty) / agents };
  } finally {
    await daemon?.stop();
    for (const pid of pids) if (isAlive(pid)) await killOwned(pid);
    await ws.cleanup();
  }
}

function screenModelMemory(count) {
  const r = spawnSync(process.execPath, ["--expose-gc", path.join(REPO, "bench/screen-memory.mjs"), String(count)], { encoding: "utf8", timeout: 120_000 });
  if (r.status !== 0) throw new Error(`screen-memory.mjs failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export async function run({ runs = 3, agents = 100, idleSeconds = 10 } = {}) {
  const results = [];
  const isolated = [];
  for (let r = 0; r < runs; r++) {
    results.push(await oneRun({ agents, idleSeconds }));
    isolated.push(screenModelMemory(agents));
  }
  const kib = (values) => summarize(values.map((v) => v / 1024));
  const perAgent = kib(results.map((x) => x.rssPerAgent));
  const perModelHeap = kib(isolated.map((x) => x.heapBytesPerModel));
  const perModelRss = kib(isolated.map((x) => x.rssBytesPerModel));
  const cpu = summarize(results.map((x) => x.idleCpuPercent));
  return [
    figure({
      id: "screen.rss_per_agent",
      name: `Daemon RSS growth per idle \`sh\` agent with its screen model (${agents} agents)`,
      unit: "KiB",
      value: perAgent,
      reference: { name: "one screen model alone (120×40, prompt parsed; heap + external)", unit: "KiB", ...perModelHeap },
      notes:
        `(RSS with ${agents} agents − RSS with none) / ${agents}; ${runs} runs, fresh daemon and project each. ` +
        `Screen model alone: ${perModelHeap.median.toFixed(0)} KiB of heap + external, ${perModelRss.median.toFixed(0)} KiB of RSS per model (${agents} models in one process, after GC)`,
    }),
    figure({
      id: "screen.idle_cpu",
      name: `Daemon CPU at idle with ${agents} \`sh\` agents and their screen models (${idleSeconds} s window)`,
      unit: "% of a core",
      value: cpu,
      target: "< 1% of a core",
      met: cpu.median < 1,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 3), agents: Number(process.env.AGENTS ?? 100) });
  console.log(JSON.stringify(rows, null, 2));
}
