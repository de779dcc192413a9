// Usage (issue 26). (1) The daemon's cost of following 30 agents whose records grow all the
// time: 30 agents whose program stands in for Claude Code (bench/usage-writer.mjs, set as the
// project's `claude` command) each append a line to their session file every 250 ms (by turns
// a 4 KiB tool result and an answer with usage: 2 model calls a second each, ten times a busy
// real agent's rate);
// the daemon's CPU over 10 s with the records growing, against the same 30 agents with their
// records still. (2) `pu usage` over 10,000 recorded agents: a usage.json of 10,000 agents
// (two models each), the whole CLI process, against `pu status --json` of the same project.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CLI_BIN, REPO, cpuSeconds, figure, isAlive, killOwned, sleep, spawnAgent, startDaemon, stopDaemonByPidFile, summarize, tempWorkspace, timeProcess } from "./lib.mjs";

const AGENTS = 30;
const WINDOW_S = 5;
const TURNS = 3;

async function followRun() {
  const ws = await tempWorkspace("usage");
  const agentHome = path.join(ws.dir, "agent-home");
  mkdirSync(agentHome);
  const growFlag = path.join(ws.dir, "grow");
  const env = { ...ws.env, HOME: agentHome, PU_BENCH_GROW_FLAG: growFlag, PU_BENCH_INTERVAL_MS: "250" };
  let daemon;
  const pids = [];
  try {
    daemon = await startDaemon(ws.home, env);
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    writeFileSync(path.join(ws.project, ".pu/config.yaml"), `agents:\n  claude:\n    command: ${JSON.stringify(path.join(REPO, "bench/usage-writer.mjs"))}\n`);
    await client.request("trust", { projectRoot: ws.project });
    for (let i = 0; i < AGENTS; i++) {
      const r = await spawnAgent(client, { projectRoot: ws.project, root: true, agent: "claude", name: `writer-${i}` });
      pids.push(r.agent.pid);
    }
    await sleep(2000);
    const window = async () => {
      const c0 = cpuSeconds(daemon.pid);
      const t0 = performance.now();
      await sleep(WINDOW_S * 1000);
      return { cpu: cpuSeconds(daemon.pid) - c0, wall: (performance.now() - t0) / 1000 };
    };
    // Still and growing windows by turns, so the daemon's own periodic work falls on both alike.
    const sum = { still: { cpu: 0, wall: 0 }, growing: { cpu: 0, wall: 0 } };
    for (let turn = 0; turn < TURNS; turn++) {
      for (const phase of ["still", "growing"]) {
        if (phase === "growing") writeFileSync(growFlag, "");
        else rmSync(growFlag, { force: true });
        await sleep(500);
        const w = await window();
        sum[phase].cpu += w.cpu;
        sum[phase].wall += w.wall;
      }
    }
    rmSync(growFlag, { force: true });
    const still = (sum.still.cpu / sum.still.wall) * 100;
    const growing = (sum.growing.cpu / sum.growing.wall) * 100;
    await sleep(1500);
    const report = await client.request("usage", { projectRoot: ws.project, by: "agent" });
    if (report.rows.length !== AGENTS || report.total.calls < AGENTS * 10) throw new Error(`usage saw ${report.rows.length} agents and ${report.total.calls} calls`);
    await client.request("kill", { projectRoot: ws.project, target: "all" }, { timeoutMs: 120_000 });
    return { still, growing, calls: report.total.calls };
  } finally {
    await daemon?.stop();
    for (const pid of pids) if (isAlive(pid)) await killOwned(pid);
    await ws.cleanup();
  }
}

async function reportRuns(rounds) {
  const ws = await tempWorkspace("usage-10k");
  try {
    execFileSync(process.execPath, [CLI_BIN, "init"], { cwd: ws.project, env: ws.env, stdio: "ignore" });
    const day = new Date().toISOString().slice(0, 10);
    const agents = {};
    for (let i = 0; i < 10_000; i++) {
      const id = `ag-${String(i).padStart(8, "0")}`;
      const counts = (n) => ({ input: 1000 * n, cacheRead: 20_000 * n, cacheWrite: 500 * n, output: 300 * n, reasoning: 0, calls: n });
      agents[id] = { name: `agent-${i}`, agentType: i % 2 ? "claude" : "codex", startedAt: new Date().toISOString(), sources: { [`claude:/records/${id}.jsonl`]: { [`${day}|claude-sonnet-4-5`]: counts(20), [`${day}|claude-haiku-4-5`]: counts(5) } } };
    }
    writeFileSync(path.join(ws.project, ".pu/usage.json"), JSON.stringify({ version: 1, agents }));
    const usage = [];
    const status = [];
    const cli = { cwd: ws.project, env: ws.env };
    // The first asks load the file into the daemon (and start it): not timed.
    timeProcess([process.execPath, CLI_BIN, "usage", "--json"], cli);
    for (let r = 0; r < rounds; r++) {
      usage.push(timeProcess([process.execPath, CLI_BIN, "usage", "--json"], cli).ms);
      status.push(timeProcess([process.execPath, CLI_BIN, "status", "--json"], cli).ms);
    }
    return { usage, status };
  } finally {
    await stopDaemonByPidFile(ws.home);
    await ws.cleanup();
  }
}

export { followRun };

export async function run({ runs = 3, rounds = 10 } = {}) {
  const follows = [];
  for (let r = 0; r < runs; r++) follows.push(await followRun());
  const growing = summarize(follows.map((f) => f.growing));
  const still = summarize(follows.map((f) => f.still));
  const added = growing.median - still.median;
  const { usage, status } = await reportRuns(rounds);
  const u = summarize(usage);
  const s = summarize(status);
  return [
    figure({
      id: "usage.follow30",
      name: `Daemon CPU with ${AGENTS} agents whose usage records grow (a line every 250 ms each: a 4 KiB tool result, then an answer with usage)`,
      unit: "% of a core",
      value: growing,
      reference: { name: "the same agents, records still", unit: "% of a core", ...still },
      target: "< 1% of a core added",
      met: added < 1,
      notes: `added: ${added.toFixed(2)} % of a core; ${TURNS} × ${WINDOW_S} s windows with records still and growing by turns, per run; calls read per run: ${follows.map((f) => f.calls).join("/")}`,
    }),
    figure({
      id: "usage.report10k",
      name: "`pu usage --json` over 10,000 recorded agents (whole process)",
      unit: "ms",
      value: u,
      reference: { name: "`pu status --json` of the same project", unit: "ms", ...s },
      ratio: u.median / s.median,
      target: "< 300 ms",
      met: u.median < 300,
      notes: `${rounds} runs each, interleaved; usage.json of 10,000 agents, two models each`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await run({ runs: Number(process.env.RUNS ?? 1) })) console.log(r.id, r.value.median.toFixed(2), r.reference?.median?.toFixed(2) ?? "");
}
