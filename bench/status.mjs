// Figure 3: `pu status` as a whole process, the way a user (or a script polling
// it) pays for it: node start-up + CLI imports + connect + hello + status.
//   warm — the daemon is running and the project has a few live agents; both the
//          human table and `--json`; reference: `node -e 0` (the floor any Node
//          CLI pays), the three runs interleaved.
//   cold — the daemon is stopped before each run, so the CLI starts it.
import { CLI_BIN, figure, spawnAgent, startDaemon, stopDaemonByPidFile, summarize, tempWorkspace, timeProcess } from "./lib.mjs";

const node = (args, opts) => timeProcess([process.execPath, ...args], opts);

export async function run({ warmRuns = 20, coldRuns = 5, agents = 3 } = {}) {
  const ws = await tempWorkspace("status");
  let daemon;
  try {
    daemon = await startDaemon(ws.home);
    await daemon.client.request("init", { projectRoot: ws.project });
    // A few agents: one at the root, the rest in their own worktrees.
    for (let i = 0; i < agents; i++) {
      await spawnAgent(daemon.client, { projectRoot: ws.project, root: i === 0, command: "sleep 3600", name: `bench-${i}` });
    }
    const opts = { cwd: ws.project, env: ws.env };
    const statusArgs = [CLI_BIN, "status", "--json"];
    const humanArgs = [CLI_BIN, "status"];

    const check = JSON.parse(node(statusArgs, opts).stdout);
    const seen = Object.keys(check.agents).length + Object.values(check.worktrees).reduce((n, w) => n + Object.keys(w.agents).length, 0);
    if (seen !== agents) throw new Error(`pu status --json listed ${seen} agents, expected ${agents}`);
    // One more of each to warm the page cache; not counted.
    node(["-e", "0"], opts);
    const table = node(humanArgs, opts).stdout;
    if (!table.includes("bench-0")) throw new Error(`pu status printed no table with bench-0:\n${table}`);

    const warm = [];
    const warmHuman = [];
    const bare = [];
    for (let i = 0; i < warmRuns; i++) {
      bare.push(node(["-e", "0"], opts).ms);
      warm.push(node(statusArgs, opts).ms);
      warmHuman.push(node(humanArgs, opts).ms);
    }
    await daemon.stop();
    daemon = undefined;

    const cold = [];
    for (let i = 0; i < coldRuns; i++) {
      await stopDaemonByPidFile(ws.home);
      cold.push(node(statusArgs, opts).ms);
    }
    await stopDaemonByPidFile(ws.home);

    const w = summarize(warm);
    const h = summarize(warmHuman);
    const b = summarize(bare);
    const c = summarize(cold);
    const ratio = w.median / b.median;
    const humanRatio = h.median / b.median;
    return [
      figure({
        id: "status.warm_human",
        name: `\`pu status\` (the table) warm (daemon running, ${agents} live agents), whole process`,
        unit: "ms",
        value: h,
        reference: { name: "node -e 0", unit: "ms", ...b },
        ratio: humanRatio,
        target: "≤ 1.2× node -e 0",
        met: humanRatio <= 1.2,
        notes: `${warmRuns} runs each, interleaved; stdout is a pipe, so no colour`,
      }),
      figure({
        id: "status.warm",
        name: `\`pu status --json\` warm (daemon running, ${agents} live agents), whole process`,
        unit: "ms",
        value: w,
        reference: { name: "node -e 0", unit: "ms", ...b },
        ratio,
        target: "≤ 1.2× node -e 0",
        met: ratio <= 1.2,
        notes: `${warmRuns} runs each, interleaved`,
      }),
      figure({
        id: "status.cold",
        name: "`pu status --json` cold (daemon stopped; the CLI starts it), whole process",
        unit: "ms",
        value: c,
        reference: { name: "node -e 0", unit: "ms", ...b },
        ratio: c.median / b.median,
        notes: `${coldRuns} runs; the project's ${agents} agents were suspended by the previous daemon's shutdown`,
      }),
    ];
  } finally {
    await daemon?.stop();
    await stopDaemonByPidFile(ws.home);
    await ws.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run();
  for (const r of rows) console.log(r.id, r.value.median.toFixed(1), `[${r.value.min.toFixed(1)}–${r.value.max.toFixed(1)}]`, r.reference.median.toFixed(1), r.ratio.toFixed(2));
}
