// Figures: a multi-agent group's join and its cost to the daemon. A 20-member multi_prompt
// group of scripted members (tests/fixtures/group-member.mjs: one turn, one line written, an
// output file) runs through 4 slots (`queue.maxParallel: 4`), polled with group_status every
// 50 ms like `pu group run` does. Measured in the same run, on the same daemon:
//   - join: the group's finished_at − the last member's finished_at (state.json). Between the
//     two the daemon lands the last member's result, evaluates the join, lands `aggregating`
//     and stamps `complete`: two state.json writes. Reference: the round trip of a request that
//     lands exactly one state.json write (queue_collection with a name), timed after the group
//     ended so the file holds the group's record as it did during the join. The ratio is the
//     join in such writes (≈ 2 is all the writes it must do; much more is time spent elsewhere).
//   - daemon CPU per member (utime + stime of the daemon from group_run until complete), against
//     the same 20 agents spawned directly (spawn in a fresh worktree, the same prompt typed, the
//     turn seen as `waiting`, kill), 4 at a time, one `status` poll every 50 ms: the ratio is
//     what the group's orchestration (slots, state.json, commit and diff stat, the join) costs
//     the daemon on top of running the agents.
//   - members per minute over the group's wall time, against that direct batch's agents per
//     minute.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { REPO, cpuSeconds, disown, figure, sleep, spawnAgent, startDaemon, summarize, tempWorkspace } from "./lib.mjs";

const MEMBER = path.join(REPO, "tests/fixtures/group-member.mjs");
const AGENT = "groupbot";
const MEMBERS = 20;
const SLOTS = 4;
const POLL_MS = 50;
const REFERENCE_ROUND_TRIPS = 20;
const TIMEOUT_MS = 300_000;

/**
 * Spawns `count` agents directly, `slots` at a time; each one's turn is over once its output
 * file exists and the daemon reports it `waiting`, then it is killed. One shared `status` poll
 * every POLL_MS (as the group is polled with one group_status). Returns wall ms and daemon CPU s.
 */
async function directBatch(client, ws, daemonPid, label, count, slots) {
  const waiters = new Map();
  let polling = true;
  let pollError;
  const poller = (async () => {
    while (polling) {
      if (waiters.size > 0) {
        try {
          const view = (await client.request("status", { projectRoot: ws.project })).worktrees;
          for (const agent of Object.values(view).flatMap((w) => Object.values(w.agents))) {
            const waiter = waiters.get(agent.id);
            if (waiter && agent.status === "waiting" && existsSync(waiter.outputFile)) {
              waiters.delete(agent.id);
              waiter.resolve();
            }
          }
        } catch (err) {
          pollError = err;
          for (const waiter of waiters.values()) waiter.reject(err);
          waiters.clear();
        }
      }
      await sleep(POLL_MS);
    }
  })();
  const deadline = Date.now() + TIMEOUT_MS;
  const spawnMs = [];
  let next = 0;
  async function worker() {
    while (next < count) {
      const i = next++;
      const outputFile = path.join(ws.dir, `${label}-${i}.out`);
      const spawnedAt = performance.now();
      const r = await spawnAgent(client, {
        projectRoot: ws.project,
        agent: AGENT,
        prompt: `bench\n\ndirect prompt ${i}`,
        name: `${label}-${i}`,
        env: { PU_VARIANT_KEY: `${label}-${i}`, PU_OUTPUT_FILE: outputFile },
      });
      spawnMs.push(performance.now() - spawnedAt);
      await new Promise((resolve, reject) => {
        if (pollError) reject(pollError);
        waiters.set(r.agentId, { outputFile, resolve, reject });
        const left = deadline - Date.now();
        setTimeout(() => {
          if (waiters.delete(r.agentId)) reject(new Error(`agent ${r.agentId} (${label}-${i}) never finished its turn`));
        }, left).unref();
      });
      await client.request("kill", { projectRoot: ws.project, target: r.agentId });
      disown(r.agent.pid);
    }
  }
  const cpu0 = cpuSeconds(daemonPid);
  const t0 = performance.now();
  try {
    await Promise.all(Array.from({ length: slots }, () => worker()));
  } finally {
    polling = false;
    await poller;
  }
  return { wallMs: performance.now() - t0, cpuS: cpuSeconds(daemonPid) - cpu0, spawnMs: summarize(spawnMs).median };
}

async function runGroup(client, ws, daemonPid) {
  const prompts = Array.from({ length: MEMBERS }, (_, i) => `variant ${i}: write your line`);
  const cpu0 = cpuSeconds(daemonPid);
  const t0 = performance.now();
  const started = await client.request("group_run", { projectRoot: ws.project, kind: "multi_prompt", agents: [AGENT], prompt: "bench", prompts });
  const deadline = Date.now() + TIMEOUT_MS;
  let group = started;
  while (group.phase !== "complete") {
    if (group.phase === "failed" || group.phase === "cancelled") {
      const members = group.members.filter((m) => m.state !== "done").map((m) => `${m.variant}: ${m.state} ${m.reason ?? ""}`);
      throw new Error(`group ${group.groupId} ${group.phase}: ${group.failureReasons.join("; ")} | ${members.join("; ")}`);
    }
    if (Date.now() > deadline) throw new Error(`group ${group.groupId} stuck in ${group.phase}`);
    await sleep(POLL_MS);
    group = await client.request("group_status", { projectRoot: ws.project, groupId: started.groupId });
  }
  const wallMs = performance.now() - t0;
  const cpuS = cpuSeconds(daemonPid) - cpu0;

  const state = JSON.parse(readFileSync(path.join(ws.home, "state.json"), "utf8"));
  const record = state.multi_agent_groups.find((g) => g.group_id === started.groupId);
  const outputs = Object.entries(record.individual_outputs ?? {});
  if (outputs.length !== MEMBERS || outputs.some(([, r]) => r.state !== "done")) {
    throw new Error(`group ${started.groupId} complete with ${outputs.length} results: ${outputs.map(([v, r]) => `${v}=${r.state}`).join(", ")}`);
  }
  const lastMemberAt = Math.max(...outputs.map(([, r]) => Date.parse(r.finished_at)));
  const joinMs = Date.parse(record.finished_at) - lastMemberAt;
  const seconds = outputs.map(([, r]) => r.seconds);
  // Where the wall time goes: how many members ran at once, and how long a freed slot took to
  // show up as the next member started (started_at is stamped once its worktree and PTY exist).
  const spans = outputs.map(([v, r]) => [Date.parse(record.members[v].started_at), Date.parse(r.finished_at)]);
  const edges = spans.flatMap(([s, f]) => [[s, 1], [f, -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, (running += d));
  const starts = spans.map(([s]) => s).sort((a, b) => a - b);
  const finishes = spans.map(([, f]) => f).sort((a, b) => a - b);
  // The k-th finish frees the slot the (SLOTS + k)-th start takes.
  const handovers = starts.slice(SLOTS).map((s, k) => s - finishes[k]);
  return { wallMs, cpuS, joinMs, memberSeconds: summarize(seconds).median, peak, handoverMs: summarize(handovers).median };
}

async function roundTrips(client, make) {
  const times = [];
  for (let i = 0; i < REFERENCE_ROUND_TRIPS; i++) {
    const t0 = performance.now();
    await make(i);
    times.push(performance.now() - t0);
  }
  return summarize(times).median;
}

async function oneRun() {
  const ws = await tempWorkspace("groups");
  let daemon;
  try {
    const scenarioFile = path.join(ws.dir, "scenario.json");
    writeFileSync(scenarioFile, JSON.stringify({ default: { lines: 1, slowMs: 0 } }));
    // The queue's cap (default: cores - 1) is the group's slots.
    writeFileSync(path.join(ws.home, "config.yaml"), `queue:\n  maxParallel: ${SLOTS}\n`);
    daemon = await startDaemon(ws.home, { ...ws.env, GROUP_TEST_SCENARIO: scenarioFile });
    const { client, pid } = daemon;
    await client.request("init", { projectRoot: ws.project });
    const config = path.join(ws.project, ".pu/config.yaml");
    writeFileSync(config, `defaultAgent: ${AGENT}\nagents:\n  ${AGENT}:\n    command: ${process.execPath} ${MEMBER}\n`);
    await client.request("trust", { projectRoot: ws.project });

    // One agent's life first, so neither measurement pays for the daemon's cold code paths.
    await directBatch(client, ws, pid, "warm", 1, 1);
    const direct = await directBatch(client, ws, pid, "direct", MEMBERS, SLOTS);
    const group = await runGroup(client, ws, pid);
    // A collection must exist before it can be chosen.
    for (const name of ["bench0", "bench1"]) mkdirSync(path.join(ws.project, ".pu/workflows", name), { recursive: true });
    const stateWriteMs = await roundTrips(client, (i) => client.request("queue_collection", { projectRoot: ws.project, name: `bench${i % 2}` }));
    const healthMs = await roundTrips(client, () => client.request("health", {}));
    return { direct, group, stateWriteMs, healthMs };
  } finally {
    await daemon?.stop();
    await ws.cleanup();
  }
}

export async function run({ runs = 3 } = {}) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await oneRun());
  const join = summarize(results.map((x) => x.group.joinMs));
  const stateWrite = summarize(results.map((x) => x.stateWriteMs));
  const health = summarize(results.map((x) => x.healthMs));
  const cpu = summarize(results.map((x) => (x.group.cpuS * 1000) / MEMBERS));
  const directCpu = summarize(results.map((x) => (x.direct.cpuS * 1000) / MEMBERS));
  const rate = summarize(results.map((x) => MEMBERS / (x.group.wallMs / 60_000)));
  const directRate = summarize(results.map((x) => MEMBERS / (x.direct.wallMs / 60_000)));
  const walls = results.map((x) => `${(x.group.wallMs / 1000).toFixed(1)} s`).join(", ");
  const directWalls = results.map((x) => `${(x.direct.wallMs / 1000).toFixed(1)} s`).join(", ");
  const memberSeconds = results.map((x) => x.group.memberSeconds.toFixed(1)).join(", ");
  const peaks = results.map((x) => x.group.peak).join(", ");
  const handovers = results.map((x) => x.group.handoverMs.toFixed(0)).join(", ");
  const spawns = results.map((x) => x.direct.spawnMs.toFixed(0)).join(", ");
  return [
    figure({
      id: "groups.join_ms",
      name: `Group join: ${MEMBERS}-member multi_prompt group through ${SLOTS} slots, last member's finished_at → group's finished_at (complete)`,
      unit: "ms",
      value: join,
      reference: { name: "one state.json write via the daemon (queue_collection round trip, group record in the file)", unit: "ms", ...stateWrite },
      ratio: join.median / stateWrite.median,
      notes: `the join lands the last result and the aggregating phase (two writes) before stamping complete, so ≈ 2× is the floor; health round trip in the same runs ${health.samples.map((h) => h.toFixed(2)).join(", ")} ms; timestamps have 1 ms resolution`,
    }),
    figure({
      id: "groups.cpu_ms_per_member",
      name: `Group: daemon CPU per member (${MEMBERS} members, ${SLOTS} slots, group_run → complete)`,
      unit: "ms",
      value: cpu,
      reference: { name: `the same ${MEMBERS} agents spawned, turned and killed directly, ${SLOTS} at a time, per agent`, unit: "ms", ...directCpu },
      ratio: cpu.median / directCpu.median,
      notes: `utime+stime of the daemon from /proc (10 ms ticks); members also get a commit and a diff stat (git runs in child processes, not counted) and their results land in state.json`,
    }),
    figure({
      id: "groups.members_per_min",
      name: `Group: members per minute (${MEMBERS} members, ${SLOTS} slots, group_run → complete seen by a 50 ms poll)`,
      unit: "members/min",
      value: rate,
      reference: { name: `the same ${MEMBERS} agents run directly, ${SLOTS} at a time`, unit: "agents/min", ...directRate },
      ratio: rate.median / directRate.median,
      notes: `group wall time per run ${walls} (direct ${directWalls}); median member seconds (start → result) ${memberSeconds}; most members running at once ${peaks}; median ms from a member's result to the next member's start (slot hand-over incl. its worktree and PTY) ${handovers}, against a direct spawn request's reply (worktree and PTY) ${spawns}`,
    }),
  ];
}
