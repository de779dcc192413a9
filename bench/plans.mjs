// Figure: a plan session's scheduling overhead. A 50-task graph (5 chains of 10, each task
// blocked by the one before it) worked by scripted role agents (tests/fixtures/plan-role.mjs)
// with at most 4 workers; per task: the session's wall time from approval to COMPLETE divided
// by the tasks, against a reference measured in the same run: one scripted agent's whole life
// through the daemon (spawn in a fresh worktree, a typed turn, kill) done sequentially.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { REPO, figure, sleep, startDaemon, summarize, tempWorkspace } from "./lib.mjs";

const PLAN_ROLE = path.join(REPO, "tests/fixtures/plan-role.mjs");
const CHAINS = 5;
const CHAIN_LENGTH = 10;
const WORKERS = 4;

function scenario() {
  const tasks = [];
  for (let c = 0; c < CHAINS; c++) {
    for (let i = 0; i < CHAIN_LENGTH; i++) {
      const id = `c${c}-t${i}`;
      tasks.push({ id, subject: `task ${id}`, description: "", blockedBy: i === 0 ? [] : [`c${c}-t${i - 1}`], criteria: [`${id}.txt exists`] });
    }
  }
  return { tasks, slowMs: 0 };
}

async function waitForPhase(client, projectRoot, sessionId, phases, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const plan = await client.request("plan_status", { projectRoot, sessionId });
    if (phases.includes(plan.phase) && (plan.phase !== "PLANNING" || plan.tasks.length > 0)) return plan;
    if (plan.phase === "FAILED") throw new Error(`plan ${sessionId} failed`);
    if (Date.now() > deadline) throw new Error(`plan ${sessionId} stuck in ${plan.phase}`);
    await sleep(100);
  }
}

async function oneRun() {
  const ws = await tempWorkspace("plans");
  let daemon;
  try {
    const scenarioFile = path.join(ws.dir, "scenario.json");
    writeFileSync(scenarioFile, JSON.stringify(scenario()));
    writeFileSync(path.join(ws.dir, "noop.txt"), "");
    // The queue's cap (default: cores - 1) would hold the workers below the plan's own limit.
    writeFileSync(path.join(ws.home, "config.yaml"), `queue:\n  maxParallel: ${WORKERS}\n`);
    daemon = await startDaemon(ws.home, { ...ws.env, PLAN_TEST_SCENARIO: scenarioFile });
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    const config = path.join(ws.project, ".pu/config.yaml");
    writeFileSync(config, `defaultAgent: planbot\nagents:\n  planbot:\n    command: ${process.execPath} ${PLAN_ROLE}\n`);
    await client.request("trust", { projectRoot: ws.project });

    // Reference: one scripted agent's life through the daemon, 5 times in a row.
    const lives = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const r = await client.request("spawn", { projectRoot: ws.project, prompt: "work", name: `ref-${i}`, env: { PU_PLAN_ROLE: "none", PU_PLAN_DIR: ws.dir, PU_OUTPUT_FILE: path.join(ws.dir, "noop.txt") } });
      for (;;) {
        const view = (await client.request("status", { projectRoot: ws.project, agentId: r.agentId })).worktrees;
        const agent = Object.values(view).flatMap((w) => Object.values(w.agents)).find((a) => a.id === r.agentId);
        if (agent?.status === "waiting") break;
        await sleep(20);
      }
      await client.request("kill", { projectRoot: ws.project, target: r.agentId });
      lives.push(performance.now() - t0);
    }

    const started = await client.request("plan_start", { projectRoot: ws.project, goal: "fifty files", maxWorkers: WORKERS, skipVerify: true });
    await waitForPhase(client, ws.project, started.sessionId, ["PLANNING"], 120_000);
    const t0 = performance.now();
    await client.request("plan_approve", { projectRoot: ws.project, sessionId: started.sessionId });
    await waitForPhase(client, ws.project, started.sessionId, ["COMPLETE"], 600_000);
    const perTask = (performance.now() - t0) / (CHAINS * CHAIN_LENGTH);
    return { perTask, agentLife: summarize(lives).median };
  } finally {
    await daemon?.stop();
    await ws.cleanup();
  }
}

export async function run({ runs = 1 } = {}) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await oneRun());
  const perTask = summarize(results.map((x) => x.perTask));
  const life = summarize(results.map((x) => x.agentLife));
  return [
    figure({
      id: "plans.ms_per_task",
      name: `Plan session: ${CHAINS * CHAIN_LENGTH}-task graph (${CHAINS} chains) through ${WORKERS} workers, approval → COMPLETE, per task`,
      unit: "ms",
      value: perTask,
      reference: { name: "one scripted agent's life via the daemon (spawn in a worktree, a turn, kill)", unit: "ms", ...life },
      ratio: perTask.median / life.median,
      notes: `each task: a worker in its own worktree from the integration branch, one pu plan check, pu's commit and merge into the integration branch; ${WORKERS} at a time, so the ratio × ${WORKERS} is the per-task cost against one agent's life`,
    }),
  ];
}
