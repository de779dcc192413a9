// Figure 4: one daemon holding 100 agents. Each run gets a fresh project and
// daemon, spawns 100 `sleep 3600` agents at the project root one request after
// another (as a script calling `pu spawn` would), lets the daemon settle, then
// samples its CPU (utime+stime from /proc/<pid>/stat) over a 10 s idle window,
// its VmRSS, and the reply time of `status` with all 100 in the report.
import {
  cpuSeconds,
  figure,
  isAlive,
  killOwned,
  rssBytes,
  sleep,
  spawnAgent,
  startDaemon,
  summarize,
  tempWorkspace,
} from "./lib.mjs";

const SETTLE_MS = 2000;

async function oneRun({ agents, idleSeconds, statusRequests }) {
  const ws = await tempWorkspace("agents");
  let daemon;
  const pids = [];
  try {
    daemon = await startDaemon(ws.home);
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    await sleep(500);
    const rssEmpty = rssBytes(daemon.pid);

    const spawnStart = performance.now();
    for (let i = 0; i < agents; i++) {
      const r = await spawnAgent(client, { projectRoot: ws.project, root: true, command: "sleep 3600", name: `idle-${i}` });
      pids.push(r.agent.pid);
    }
    const spawnMs = performance.now() - spawnStart;

    await sleep(SETTLE_MS);
    const cpu0 = cpuSeconds(daemon.pid);
    const t0 = performance.now();
    await sleep(idleSeconds * 1000);
    const cpu1 = cpuSeconds(daemon.pid);
    const wall = (performance.now() - t0) / 1000;
    const idleCpuPercent = ((cpu1 - cpu0) / wall) * 100;
    const rss = rssBytes(daemon.pid);

    const statusTimes = [];
    for (let i = 0; i < statusRequests; i++) {
      const start = performance.now();
      const report = await client.request("status", { projectRoot: ws.project });
      statusTimes.push(performance.now() - start);
      if (i === 0) {
        const live = Object.values(report.agents).filter((a) => a.live).length;
        if (live !== agents) throw new Error(`status shows ${live} live agents, expected ${agents}`);
      }
    }

    await client.request("kill", { projectRoot: ws.project, target: "all" }, { timeoutMs: 120_000 });
    return { spawnMs, idleCpuPercent, rss, rssEmpty, statusMs: summarize(statusTimes).median };
  } finally {
    await daemon?.stop();
    for (const pid of pids) if (isAlive(pid)) await killOwned(pid);
    await ws.cleanup();
  }
}

export async function run({ runs = 3, agents = 100, idleSeconds = 10, statusRequests = 20 } = {}) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await oneRun({ agents, idleSeconds, statusRequests }));
  const pick = (k) => summarize(results.map((x) => x[k]));
  const mb = (s) => ({ ...s, median: s.median / 2 ** 20, min: s.min / 2 ** 20, max: s.max / 2 ** 20, samples: s.samples.map((v) => v / 2 ** 20) });
  const spawn = pick("spawnMs");
  const cpu = pick("idleCpuPercent");
  const rss = mb(pick("rss"));
  const rssEmpty = mb(pick("rssEmpty"));
  const status = pick("statusMs");
  return [
    figure({
      id: "agents.spawn100",
      name: `Spawn ${agents} agents (sequential spawn requests, --root, \`sleep 3600\`)`,
      unit: "ms",
      value: spawn,
      notes: `${(spawn.median / agents).toFixed(1)} ms per agent; ${runs} runs, fresh daemon and project each`,
    }),
    figure({
      id: "agents.idle_cpu",
      name: `Daemon CPU at idle with ${agents} agents (${idleSeconds} s window)`,
      unit: "% of a core",
      value: cpu,
      target: "< 1% of a core",
      met: cpu.median < 1,
    }),
    figure({
      id: "agents.rss",
      name: `Daemon RSS with ${agents} agents`,
      unit: "MiB",
      value: rss,
      reference: { name: "same daemon with 0 agents", unit: "MiB", ...rssEmpty },
      ratio: rss.median / rssEmpty.median,
    }),
    figure({
      id: "agents.status_reply",
      name: `\`status\` request reply time with ${agents} agents`,
      unit: "ms",
      value: status,
      notes: `median of ${statusRequests} requests per run on one connection; value = median over runs`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 3), agents: Number(process.env.AGENTS ?? 100) });
  for (const r of rows) console.log(r.id, r.value.median.toFixed(2), `[${r.value.min.toFixed(2)}–${r.value.max.toFixed(2)}]`, r.reference?.median?.toFixed(2) ?? "");
}
