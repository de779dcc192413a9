// Figure: the work queue's throughput. 200 tickets are queued (paused) in a fresh project
// with a one-step workflow (`echo` in a plain shell agent), the queue gets 4 slots
// (queue.maxParallel in $PU_HOME/config.yaml), and is resumed; the clock runs until the last
// ticket is in done/. Each ticket costs a git worktree, an agent start, one turn and a stop.
// Measured: tickets per minute, and the daemon's own CPU (utime+stime, children excluded:
// git and the agents are separate processes) per ticket.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cpuSeconds, figure, sleep, startDaemon, summarize, tempWorkspace } from "./lib.mjs";

const WORKFLOW = `steps:\n  - name: do\n    prompt: "echo ticket {{TICKET_ID}} done"\n`;

async function oneRun({ tickets, slots }) {
  const ws = await tempWorkspace("queue");
  writeFileSync(path.join(ws.home, "config.yaml"), `queue:\n  maxParallel: ${slots}\n`);
  let daemon;
  try {
    daemon = await startDaemon(ws.home, { ...ws.env, SHELL: "/bin/sh" });
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    writeFileSync(path.join(ws.project, ".pu", "config.yaml"), "defaultAgent: terminal\n");
    mkdirSync(path.join(ws.project, ".pu", "workflows"), { recursive: true });
    writeFileSync(path.join(ws.project, ".pu", "workflows", "TASK.yaml"), WORKFLOW);
    // The workflow types into its agents: a trust item like any project file that does.
    await client.request("trust", { projectRoot: ws.project });
    await client.request("queue_pause", {});
    for (let i = 0; i < tickets; i++) await client.request("ticket_create", { projectRoot: ws.project, title: `bench ticket ${i}`, ticketType: "TASK" });
    const doneDir = path.join(ws.project, ".pu", "tickets", "done");
    const cpu0 = cpuSeconds(daemon.pid);
    const t0 = performance.now();
    await client.request("queue_resume", {});
    // Polled from this process (a directory listing), so the daemon does no extra work for it.
    for (;;) {
      if (readdirSync(doneDir).length >= tickets) break;
      if (performance.now() - t0 > 30 * 60_000) throw new Error("the queue did not finish within 30 min");
      await sleep(100);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(daemon.pid) - cpu0;
    const state = await client.request("queue_status", {});
    if (state.slotsUsed !== 0) throw new Error(`slots still used after the last ticket: ${state.slotsUsed}`);
    return { perMinute: (tickets / seconds) * 60, cpuMsPerTicket: (cpu * 1000) / tickets };
  } finally {
    await daemon?.stop();
    await ws.cleanup();
  }
}

export async function run({ runs = 1, tickets = 200, slots = 4 } = {}) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await oneRun({ tickets, slots }));
  const rate = summarize(results.map((x) => x.perMinute));
  const cpu = summarize(results.map((x) => x.cpuMsPerTicket));
  return [
    figure({
      id: "queue.tickets_per_minute",
      name: `Work queue: ${tickets} tickets, one-step workflow (shell agent, \`echo\`), ${slots} slots`,
      unit: "tickets/min",
      value: rate,
      notes: `each ticket: git worktree, agent start, one turn, stop; ${runs} run(s)`,
    }),
    figure({
      id: "queue.daemon_cpu_per_ticket",
      name: "Work queue: daemon CPU per ticket (its own utime+stime; git and agents excluded)",
      unit: "ms",
      value: cpu,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 1), tickets: Number(process.env.TICKETS ?? 200) });
  for (const r of rows) console.log(r.id, r.value.median.toFixed(2), `[${r.value.min.toFixed(2)}–${r.value.max.toFixed(2)}]`);
}
