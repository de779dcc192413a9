// The work queue in a real daemon, worked by the scripted fake agent (a custom agent type):
// steps as turns, artifacts, gate retries, reviews, timeouts, pause, caps, hand-dropped
// tickets, state.json (its shape, a corrupt file) and a daemon SIGKILL mid-ticket.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OperatorStateSchema, type OperatorState } from "@pu/core/operator-state";
import { listAgents } from "@pu/core/manifest";
import type { Client } from "@pu/ipc/client";
import { appendHistory, findTicket, moveTicket } from "../src/orchestration/queue/tickets.js";
import {
  cleanupAll,
  FAKE_AGENT_COMMAND,
  makeProject,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  trustProject,
  waitFor,
  type TestDaemon,
} from "./helpers/daemon.js";

afterEach(cleanupAll);

const FAKE_CONFIG = `defaultAgent: fake\nagents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`;

function writeWorkflow(root: string, type: string, yaml: string): void {
  mkdirSync(path.join(root, ".pu", "workflows"), { recursive: true });
  writeFileSync(path.join(root, ".pu", "workflows", `${type}.yaml`), yaml);
}

function readState(home: string): OperatorState {
  return OperatorStateSchema.strict().parse(JSON.parse(readFileSync(path.join(home, "state.json"), "utf8")));
}

function daemonLog(home: string): Record<string, unknown>[] {
  return readFileSync(path.join(home, "daemon.log"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function trackAgents(root: string): void {
  for (const { agent } of listAgents(readManifest(root))) trackAgentPid(agent.pid);
}

async function ticketState(client: Client, root: string, id: string): Promise<string> {
  return (await client.request("ticket_show", { projectRoot: root, ticketId: id })).ticket.state;
}

async function waitDone(client: Client, root: string, id: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${id} to be done`, async () => (await ticketState(client, root, id)) === "done", timeoutMs);
}

async function waitReview(client: Client, root: string, id: string, what = "a review"): Promise<{ step: string | null; reviewState: string | null; lastMessage: string | null; agentId: string | null }> {
  return waitFor(`${id} to wait for ${what}`, async () => (await client.request("review_list", { projectRoot: root })).reviews.find((r) => r.ticketId === id));
}

/**
 * The text of `file` the first moment it exists (looked at every millisecond), so a test can
 * check what a person running `pu ticket show` at that moment would read.
 */
function firstSightOf(file: string): { text: Promise<string>; stop: () => void } {
  let stop = () => {};
  const text = new Promise<string>((resolve) => {
    const timer = setInterval(() => {
      try {
        const seen = readFileSync(file, "utf8");
        clearInterval(timer);
        resolve(seen);
      } catch {
        // not there yet
      }
    }, 1);
    stop = () => clearInterval(timer);
  });
  return { text, stop };
}

async function agentOutput(client: Client, agentId: string): Promise<string> {
  return Buffer.from((await client.request("logs", { agentId })).data).toString("utf8");
}

async function setup(configYaml = FAKE_CONFIG): Promise<{ daemon: TestDaemon; client: Client; root: string }> {
  const daemon = await startTestDaemon();
  const client = await daemon.client();
  const repo = await makeProject(client, configYaml);
  return { daemon, client, root: repo.root };
}

describe("work queue", () => {
  it("works a ticket through its steps: artifact, a gate retry, a plan review rejected then approved, output summary, stats", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(
      root,
      "FEAT",
      `steps:
  - name: plan
    prompt: "write PLAN.md plan for {{TICKET_ID}}: {{TITLE}}"
    artifact: PLAN.md
    review: plan
  - name: build
    prompt: "env PU_TICKET_ID"
    gate: { run: "test -f .tried || { touch .tried; echo not yet; exit 1; }" }
    max_retries: 2
  - name: report
    prompt: "write {{OUTPUT_FILE}} summary of {{TICKET_ID}}"
`,
    );
    await trustProject(client, root);
    const created = await client.request("ticket_create", { projectRoot: root, title: "Dark mode", ticketType: "FEAT", priority: "P1", description: "Make it dark." });
    expect(created.ticket.id).toBe("FEAT-0001");

    const review = await waitReview(client, root, "FEAT-0001", "the plan review");
    expect(review).toMatchObject({ step: "plan", reviewState: "pending_plan" });
    await waitFor("state.json to hold the review", () => readState(daemon.home).agents[0]?.review_state === "pending_plan");
    let state = readState(daemon.home);
    const running = state.agents[0];
    expect(running).toMatchObject({ ticket_id: "FEAT-0001", ticket_type: "FEAT", project: root, status: "awaiting_input", current_step: "plan", session_wrapper: "pu", llm_tool: "fake", review_state: "pending_plan", paired: false });
    const agentId = running?.session_name ?? "";
    trackAgents(root);
    expect(existsSync(path.join(running?.worktree_path ?? "", "PLAN.md"))).toBe(true);
    expect(running?.session_context_ref).toMatch(/^wt-/);

    await client.request("review_reject", { projectRoot: root, ticketId: "FEAT-0001", reason: "more detail please" });
    await waitFor("the reason typed into the agent", async () => (await agentOutput(client, agentId)).includes("Review: changes requested: more detail please"));
    await waitReview(client, root, "FEAT-0001", "the plan review again");
    const doneFile = firstSightOf(path.join(root, ".pu", "tickets", "done", "FEAT-0001.md"));
    await client.request("review_approve", { projectRoot: root, ticketId: "FEAT-0001", note: "good plan" });

    await waitDone(client, root, "FEAT-0001");
    // A ticket in done/ already says how it ended: the history is written before the move.
    const firstSeen = await Promise.race([doneFile.text, new Promise<string>((resolve) => setTimeout(() => resolve(""), 5000))]);
    doneFile.stop();
    expect(firstSeen.match(/event: (\S+)/g)?.at(-1), "the last history event of the ticket when it first appeared in done/").toBe("event: done");
    const output = await agentOutput(client, agentId);
    expect(output).toContain("env PU_TICKET_ID=FEAT-0001");
    // The gate failed once: its failure was typed back, and the second check passed.
    expect(output).toContain("The check `test -f .tried");
    expect(output).toContain("not yet");

    await waitFor("the agent's exit in the stats", () => readState(daemon.home).project_llm_stats?.[root] !== undefined);
    state = readState(daemon.home);
    expect(state.agents).toEqual([]);
    expect(state.completed).toEqual([
      expect.objectContaining({ ticket_id: "FEAT-0001", ticket_type: "FEAT", project: root, summary: "summary of FEAT-0001", output_tickets: [] }),
    ]);
    expect(state.multi_agent_groups).toEqual([]);
    const usage = state.project_llm_stats?.[root]?.tool_usage?.fake;
    expect(usage).toMatchObject({ ticket_count: 1, success_count: 1 });

    const shown = await client.request("ticket_show", { projectRoot: root, ticketId: "FEAT-0001" });
    const history = (shown.ticket.history as { event: string; step?: string; note?: string; by?: string }[]).map((h) => [h.event, h.step, h.note]);
    expect(history).toEqual([
      ["dispatched", undefined, undefined],
      ["rejected", "plan", "more detail please"],
      ["approved", "plan", "good plan"],
      ["step done", "plan", "good plan"],
      ["step done", "build", undefined],
      ["step done", "report", undefined],
      ["done", undefined, undefined],
    ]);
    expect(existsSync(path.join(root, ".pu", "tickets", "done", "FEAT-0001.md"))).toBe(true);
    const stats = await client.request("stats", { projectRoot: root });
    expect(stats.rows).toEqual([expect.objectContaining({ tool: "fake", model: "default", runs: 1, successes: 1, failures: 0 })]);
  }, 60_000);

  it("pause holds queue dispatch and schedule firings; a person's spawn still runs and is told; resume dispatches", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: do\n    prompt: "echo doing {{TICKET_ID}}"\n`);
    await trustProject(client, root);
    expect(await client.request("queue_pause", {})).toEqual({ paused: true });
    await client.request("ticket_create", { projectRoot: root, title: "held", ticketType: "TASK" });
    const startAt = new Date(Date.now() + 1500).toISOString();
    await client.request("definition_save", {
      projectRoot: root,
      kind: "schedule",
      name: "tick",
      content: `recurrence: hourly\nstartAt: "${startAt}"\ntrigger:\n  inlinePrompt: "echo scheduled"\n  agent: fake\nroot: true\n`,
    });
    // The schedule's due time passes: it is held (logged), not fired.
    await waitFor("the schedule to be held", () => daemonLog(daemon.home).some((e) => e.event === "schedule_held_paused"), 15_000);
    expect(listAgents(readManifest(root))).toEqual([]);
    expect(await ticketState(client, root, "TASK-0001")).toBe("queue");
    const status = await client.request("queue_status", { projectRoot: root });
    expect(status).toMatchObject({ paused: true, slotsUsed: 0 });
    expect(status.waiting.map((t) => t.id)).toEqual(["TASK-0001"]);

    const spawned = await client.request("spawn", { projectRoot: root, agent: "fake", root: true });
    trackAgentPid(spawned.agent.pid);
    expect(spawned.warnings.join("\n")).toContain("the queue is paused");
    await client.request("kill", { projectRoot: root, target: spawned.agentId });
    expect(readState(daemon.home).paused).toBe(true);

    await client.request("queue_resume", {});
    await waitDone(client, root, "TASK-0001");
    trackAgents(root);
    // The person's agent's exit was counted too (killed: a failure).
    const usage = await waitFor("both exits in the stats", () => {
      const fake = readState(daemon.home).project_llm_stats?.[root]?.tool_usage?.fake;
      return fake?.ticket_count === 2 ? fake : undefined;
    });
    expect(usage).toMatchObject({ ticket_count: 2, success_count: 1, failure_count: 1 });
  }, 60_000);

  it("never runs more agents than queue.maxParallel, nor more per project than maxPerProject", async () => {
    const daemon = await startTestDaemon();
    writeFileSync(path.join(daemon.home, "config.yaml"), "queue:\n  maxParallel: 3\n");
    const client = await daemon.client();
    const a = (await makeProject(client, `${FAKE_CONFIG}queue:\n  maxPerProject: 2\n`)).root;
    const b = (await makeProject(client, FAKE_CONFIG)).root;
    for (const root of [a, b]) {
      writeWorkflow(root, "TASK", `steps:\n  - name: do\n    prompt: "sleep 400"\n  - name: more\n    prompt: "sleep 200"\n`);
      await trustProject(client, root);
    }
    await client.request("queue_pause", {});
    for (let i = 0; i < 5; i++) {
      await client.request("ticket_create", { projectRoot: a, title: `a${i}`, ticketType: "TASK" });
      await client.request("ticket_create", { projectRoot: b, title: `b${i}`, ticketType: "TASK" });
    }
    await client.request("queue_resume", {});
    for (let i = 1; i <= 5; i++) {
      await waitDone(client, a, `TASK-000${i}`, 90_000);
      await waitDone(client, b, `TASK-000${i}`, 90_000);
    }
    // From the record of every agent's life: its start and its exit.
    const lives = [a, b].flatMap((root) =>
      listAgents(readManifest(root)).map(({ agent }) => ({ root, start: Date.parse(agent.startedAt), end: Date.parse(agent.completedAt ?? "") })),
    );
    expect(lives).toHaveLength(10);
    const edges = lives.flatMap((l) => [{ at: l.start, d: 1, root: l.root }, { at: l.end, d: -1, root: l.root }]).sort((x, y) => x.at - y.at || x.d - y.d);
    let total = 0;
    let maxTotal = 0;
    const per = new Map<string, number>();
    let maxA = 0;
    for (const e of edges) {
      total += e.d;
      per.set(e.root, (per.get(e.root) ?? 0) + e.d);
      maxTotal = Math.max(maxTotal, total);
      maxA = Math.max(maxA, per.get(a) ?? 0);
    }
    expect(maxTotal).toBeLessThanOrEqual(3);
    expect(maxTotal).toBeGreaterThanOrEqual(2);
    expect(maxA).toBeLessThanOrEqual(2);
    // And the daemon's own slot events never counted past the cap.
    const taken = daemonLog(daemon.home).filter((e) => e.event === "queue_slot_taken").map((e) => Number(e.used));
    expect(taken).toHaveLength(10);
    expect(Math.max(...taken)).toBeLessThanOrEqual(3);
  }, 120_000);

  it("a step timeout marks the ticket awaiting_input once, without killing; the step then finishes", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: slow\n    prompt: "sleep 4000"\n    timeout_minutes: 0.02\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "slow one", ticketType: "TASK" });
    const waiting = await waitReview(client, root, "TASK-0001", "the timeout notice");
    expect(waiting.lastMessage).toContain("timed out after 0.02 min");
    await waitFor("state.json to say awaiting_input", () => readState(daemon.home).agents[0]?.status === "awaiting_input");
    await waitDone(client, root, "TASK-0001");
    trackAgents(root);
    const notices = daemonLog(daemon.home).filter((e) => e.event === "ticket_awaiting_input");
    expect(notices).toHaveLength(1);
    const completed = await waitFor("the completed record", () => readState(daemon.home).completed[0]);
    expect(completed.summary).toContain("slept 4000");
  }, 60_000);

  it("without an output file a ticket's summary is its agent's screen, not raw bytes with a line editor's backspaces", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: only\n    prompt: "redraw summed up"\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "screen summary", ticketType: "TASK" });
    await waitDone(client, root, "TASK-0001");
    trackAgents(root);
    const completed = await waitFor("the completed record", () => readState(daemon.home).completed[0]);
    expect(completed.summary).toContain("final summed up");
    expect(completed.summary).not.toContain("draft");
    expect(completed.summary).not.toContain("\b");
  }, 60_000);

  it("a step timeout longer than setTimeout can hold (40,000 min) does not flag the ticket at once", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: long\n    prompt: "sleep 1500"\n    timeout_minutes: 40000\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "long one", ticketType: "TASK" });
    await waitDone(client, root, "TASK-0001");
    trackAgents(root);
    expect(daemonLog(daemon.home).filter((e) => e.event === "ticket_awaiting_input")).toHaveLength(0);
    const completed = await waitFor("the completed record", () => readState(daemon.home).completed[0]);
    expect(completed.summary).toContain("slept 1500");
  }, 60_000);

  it("a gate out of retries waits for a person; a silent busy agent is reported hung once", async () => {
    const { daemon, client, root } = await setup(`${FAKE_CONFIG}queue:\n  hungAfterMinutes: 0.02\n`);
    writeWorkflow(root, "TASK", `steps:\n  - name: check\n    prompt: "echo try"\n    gate: { run: "echo never passes; exit 3" }\n    max_retries: 1\n  - name: quiet\n    prompt: "sleep 3000"\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "stubborn", ticketType: "TASK" });
    const stuck = await waitReview(client, root, "TASK-0001", "a decision on the gate");
    expect(stuck.lastMessage).toMatch(/^needs a decision: step check: The check `echo never passes; exit 3` exited 3/);
    expect(stuck.lastMessage).toContain("after 2 attempts");
    await client.request("review_approve", { projectRoot: root, ticketId: "TASK-0001", note: "ship it anyway" });
    // The approval lands asynchronously: wait for the review the hung notice opens, not the old one.
    const hung = await waitFor("TASK-0001 to wait for the hung notice", async () =>
      (await client.request("review_list", { projectRoot: root })).reviews.find((r) => r.ticketId === "TASK-0001" && !r.lastMessage?.startsWith("needs a decision: step check")),
    );
    expect(hung.lastMessage).toContain("has not changed for 0.02 min");
    await waitDone(client, root, "TASK-0001");
    trackAgents(root);
    const notices = daemonLog(daemon.home).filter((e) => e.event === "ticket_awaiting_input");
    expect(notices).toHaveLength(2);
  }, 60_000);

  it("holds a hand-written ticket dropped into queue/ until pu trust, then picks it up; reports a bad one where it lies", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: do\n    prompt: "echo by hand {{TITLE}}"\n`);
    await trustProject(client, root);
    await client.request("queue_status", { projectRoot: root }); // the daemon knows (and watches) the project
    const queueDir = path.join(root, ".pu", "tickets", "queue");
    writeFileSync(path.join(queueDir, "TASK-0007.md"), "---\nid: TASK-0007\ntype: TASK\ntitle: written by hand\npriority: P1\ncreated_at: 2026-01-01T00:00:00Z\n---\n\nDo it.\n");
    writeFileSync(path.join(queueDir, "TASK-0008.md"), "---\nid: TASK-0008\ntype: TASK\npriority: P9\ncreated_at: 2026-01-01T00:00:00Z\n---\n");
    // pu did not write it for this person: the dispatcher sees it and holds it, and both lists say why.
    await waitFor("the dispatcher to hold the untrusted ticket", () => daemonLog(daemon.home).find((e) => e.event === "ticket_untrusted" && e.ticketId === "TASK-0007"));
    const queued = await client.request("queue_status", { projectRoot: root });
    expect(queued.running).toEqual([]);
    expect(queued.problems.map((p) => p.message)).toContainEqual(expect.stringContaining("TASK-0007: untrusted: run `pu trust`"));
    expect((await client.request("ticket_list", { projectRoot: root })).problems.map((p) => p.message)).toContainEqual(expect.stringContaining("TASK-0007: untrusted"));
    expect(await ticketState(client, root, "TASK-0007")).toBe("queue");
    await trustProject(client, root);
    await waitDone(client, root, "TASK-0007");
    trackAgents(root);
    const listed = await client.request("ticket_list", { projectRoot: root });
    expect(listed.tickets.map((t) => [t.id, t.state])).toEqual([["TASK-0007", "done"]]);
    expect(listed.problems).toHaveLength(1);
    expect(listed.problems[0]?.message).toMatch(/TASK-0008\.md: (title|priority)/);
    expect(existsSync(path.join(queueDir, "TASK-0008.md"))).toBe(true);
    const next = await client.request("ticket_create", { projectRoot: root, title: "after", ticketType: "TASK" });
    expect(next.ticket.id).toBe("TASK-0009");
  }, 60_000);

  it("records a ticket created from inside a ticket's agent as its output ticket; cancel stops a running ticket and keeps its worktree", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: wait\n    prompt: "echo waiting"\n    review: pr\n`);
    writeWorkflow(root, "FIX", `steps:\n  - name: long\n    prompt: "sleep 30000"\n`);
    writeFileSync(path.join(daemon.home, "config.yaml"), "queue:\n  maxParallel: 2\n");
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "parent", ticketType: "TASK" });
    const review = await waitReview(client, root, "TASK-0001", "the pr review");
    expect(review.reviewState).toBe("pending_pr_creation");
    const child = await client.request("ticket_create", { projectRoot: root, title: "follow-up", ticketType: "FIX", callerAgentId: review.agentId ?? "" });
    expect(child.outputOf).toBe("TASK-0001");
    await client.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client, root, "TASK-0001");
    const parent = await waitFor("the parent's record", () => readState(daemon.home).completed.find((c) => c.ticket_id === "TASK-0001"));
    expect(parent.output_tickets).toEqual(["FIX-0001"]);

    await waitFor("the follow-up to run", () => readState(daemon.home).agents.find((a) => a.ticket_id === "FIX-0001" && a.status === "running"));
    trackAgents(root);
    const cancelled = await client.request("ticket_cancel", { projectRoot: root, ticketId: "FIX-0001" });
    expect(cancelled.stoppedAgents).toHaveLength(1);
    expect(existsSync(cancelled.worktreePath ?? "")).toBe(true);
    expect(await ticketState(client, root, "FIX-0001")).toBe("done");
    const state = readState(daemon.home);
    expect(state.agents).toEqual([]);
    expect(state.completed.find((c) => c.ticket_id === "FIX-0001")?.summary).toBe("cancelled");
  }, 60_000);

  it("pu queue collection takes a collection that exists (default, or a folder of workflows) and refuses a typo that would stall every ticket", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const root = (await makeProject(client, FAKE_CONFIG)).root;
    await expect(client.request("queue_collection", { projectRoot: root, name: "reviw-heavy" })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining('no workflow collection "reviw-heavy"') });
    expect(await client.request("queue_collection", { projectRoot: root })).toMatchObject({ collection: "default" });
    mkdirSync(path.join(root, ".pu", "workflows", "review-heavy"), { recursive: true });
    expect(await client.request("queue_collection", { projectRoot: root, name: "review-heavy" })).toMatchObject({ collection: "review-heavy" });
    mkdirSync(path.join(daemon.home, "workflows", "mine"), { recursive: true });
    expect(await client.request("queue_collection", { projectRoot: root, name: "mine" })).toMatchObject({ collection: "mine" });
    expect(await client.request("queue_collection", { projectRoot: root, name: "default" })).toMatchObject({ collection: "default" });
  }, 60_000);

  it("a corrupt state.json is reported and never overwritten", async () => {
    const daemon = await startTestDaemon();
    const file = path.join(daemon.home, "state.json");
    await daemon.stop();
    writeFileSync(file, '{"paused": "maybe", "agents": []}');
    const again = await startTestDaemon(daemon.home);
    const client = await again.client();
    const root = (await makeProject(client, FAKE_CONFIG)).root;
    const status = await client.request("queue_status", { projectRoot: root });
    expect(status.stateError).toContain(file);
    expect(status.stateError).toContain("paused");
    await expect(client.request("queue_pause", {})).rejects.toMatchObject({ code: "INVALID_STATE" });
    const spawned = await client.request("spawn", { projectRoot: root, agent: "fake", root: true });
    trackAgentPid(spawned.agent.pid);
    await client.request("kill", { projectRoot: root, target: spawned.agentId });
    await waitFor("the exit to be handled", () => daemonLog(again.home).some((e) => e.event === "usage_not_recorded"));
    expect(readFileSync(file, "utf8")).toBe('{"paused": "maybe", "agents": []}');
  }, 60_000);

  it("a state.json spoiled while the daemon runs is not written over: the queue stops and names it", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const file = path.join(daemon.home, "state.json");
    await client.request("queue_pause", {});
    expect(readState(daemon.home).paused).toBe(true);
    // Fine edits go through as before; a broken file is kept as it is.
    writeFileSync(file, '{"paused": tru');
    await expect(client.request("queue_resume", {})).rejects.toMatchObject({ code: "INVALID_STATE", message: expect.stringContaining(file) });
    expect(readFileSync(file, "utf8")).toBe('{"paused": tru');
    await expect(client.request("queue_pause", {})).rejects.toMatchObject({ code: "INVALID_STATE" });
    expect(readFileSync(file, "utf8")).toBe('{"paused": tru');
  }, 60_000);

  it("a ticket waiting for a review waits again after a daemon restart, and goes on when approved", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: plan\n    prompt: "echo planning"\n    review: plan\n  - name: after\n    prompt: "write {{OUTPUT_FILE}} approved after restart"\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "patient", ticketType: "TASK" });
    await waitReview(client, root, "TASK-0001", "the plan review");
    await waitFor("state.json to hold the review", () => readState(daemon.home).agents[0]?.review_state === "pending_plan");
    trackAgents(root);
    await daemon.stop();

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    const again = await waitReview(client2, root, "TASK-0001", "the review after the restart");
    expect(again).toMatchObject({ step: "plan", reviewState: "pending_plan" });
    trackAgents(root);
    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]?.summary).toBe("approved after restart");
  }, 60_000);

  it("an unreadable trust.json holds an approved ticket for a person instead of failing it as edited; fixed and approved, it goes on", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: plan\n    prompt: "echo planning"\n    review: plan\n  - name: build\n    prompt: "write {{OUTPUT_FILE}} built after the fix"\n`);
    writeFileSync(path.join(daemon.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "first", ticketType: "TASK" });
    await client.request("ticket_create", { projectRoot: root, title: "second, waits for the slot", ticketType: "TASK" });
    await waitReview(client, root, "TASK-0001", "the plan review");
    trackAgents(root);
    const trustFile = path.join(daemon.home, "trust.json");
    const trusted = readFileSync(trustFile, "utf8");
    writeFileSync(trustFile, '{"version":1,"projects":');

    // The queue says what holds the waiting ticket: the file, not "run pu trust".
    const problems = (await client.request("queue_status", { projectRoot: root })).problems.map((p) => p.message);
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^TASK-0002: not started: trust\\.json cannot be read: ${trustFile}: not valid JSON`)));
    expect(problems.join("\n")).not.toContain("untrusted");

    await client.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    const waiting = await waitFor("the ticket to wait on trust.json", async () =>
      (await client.request("review_list", { projectRoot: root })).reviews.find((r) => r.ticketId === "TASK-0001" && r.lastMessage?.includes("trust.json")),
    );
    expect(waiting.step).toBe("build");
    expect(waiting.lastMessage).toContain(`needs a decision: step build has not started: trust.json cannot be read: ${trustFile}: not valid JSON`);
    expect(waiting.lastMessage).toContain("`pu review approve TASK-0001`");
    expect(await ticketState(client, root, "TASK-0001")).toBe("in-progress");
    expect(readState(daemon.home).agents[0]).toMatchObject({ ticket_id: "TASK-0001", status: "awaiting_input" });
    expect(readFileSync(trustFile, "utf8"), "a corrupt trust.json is never overwritten").toBe('{"version":1,"projects":');

    writeFileSync(trustFile, trusted);
    await client.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client, root, "TASK-0001");
    expect(readState(daemon.home).completed.find((c) => c.ticket_id === "TASK-0001")?.summary).toBe("built after the fix");
    // The file fixed, the held ticket starts too (and stops at its own plan review).
    await waitReview(client, root, "TASK-0002", "its plan review");
    trackAgents(root);
  }, 60_000);

  it("a daemon restarted with an unreadable trust.json keeps a ticket in progress waiting for the file (not failed); fixed and trusted, it goes on", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: plan\n    prompt: "echo planning"\n    review: plan\n  - name: build\n    prompt: "write {{OUTPUT_FILE}} built after the restart"\n`);
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "patient", ticketType: "TASK" });
    await waitReview(client, root, "TASK-0001", "the plan review");
    await waitFor("state.json to hold the review", () => readState(daemon.home).agents[0]?.review_state === "pending_plan");
    trackAgents(root);
    await daemon.stop();
    const trustFile = path.join(daemon.home, "trust.json");
    const trusted = readFileSync(trustFile, "utf8");
    writeFileSync(trustFile, '{"version":1,"projects":');

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitFor("the ticket to wait for trust.json", () => readState(restarted.home).agents[0]?.last_message?.includes("trust.json cannot be read"));
    expect(readState(restarted.home).agents[0]).toMatchObject({ ticket_id: "TASK-0001", status: "awaiting_input", last_message: expect.stringContaining(`${trustFile}: not valid JSON`) });
    expect(await ticketState(client2, root, "TASK-0001")).toBe("in-progress");
    expect(readFileSync(trustFile, "utf8")).toBe('{"version":1,"projects":');

    writeFileSync(trustFile, trusted);
    await trustProject(client2, root);
    await waitReview(client2, root, "TASK-0001", "the plan review again");
    trackAgents(root);
    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]?.summary).toBe("built after the restart");
  }, 60_000);

  it("a daemon killed while ending tickets: the next start moves them to done/, each with its ending written once", async () => {
    const { daemon, client, root } = await setup();
    await client.request("queue_pause", {});
    const titles = ["ended before the move", "ended before its history", "failed before its history", "cancelled before its history"];
    for (const title of titles) await client.request("ticket_create", { projectRoot: root, title, ticketType: "TASK" });
    await daemon.stop();
    // What a SIGKILL inside QueueEnd.finish leaves: the completed records written, the tickets
    // still in in-progress/, the first with its ending already in its history, the others without.
    const ids = ["TASK-0001", "TASK-0002", "TASK-0003", "TASK-0004"];
    for (const id of ids) await moveTicket(root, id, "queue", "in-progress");
    await appendHistory(root, "TASK-0001", { event: "done" });
    const state = readState(daemon.home);
    const completed = (id: string, summary: string) => ({ ticket_id: id, ticket_type: "TASK", project: root, summary, completed_at: new Date().toISOString(), pr_url: null, output_tickets: [] });
    const records = [
      completed("TASK-0001", "summary of TASK-0001"),
      completed("TASK-0002", "summary of TASK-0002"),
      completed("TASK-0003", "failed: gate `pnpm test` failed"),
      completed("TASK-0004", "cancelled"),
    ];
    writeFileSync(path.join(daemon.home, "state.json"), JSON.stringify({ ...state, paused: false, completed: records }));

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await client2.request("queue_status", { projectRoot: root });
    const endings = { "TASK-0001": "done", "TASK-0002": "done", "TASK-0003": "failed", "TASK-0004": "cancelled" };
    for (const [id, ending] of Object.entries(endings)) {
      await waitFor(`${id} in done/`, () => existsSync(path.join(root, ".pu", "tickets", "done", `${id}.md`)));
      const events = ((await findTicket(root, id)).history as { event: string }[]).map((h) => h.event);
      expect(events.filter((e) => e === "done" || e === "failed" || e === "cancelled"), id).toEqual([ending]);
    }
  }, 60_000);

  it("after a daemon SIGKILL mid-ticket, the restarted daemon continues the ticket with a re-prompted agent (once its edited workflow is trusted)", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: first\n    prompt: "echo first"\n  - name: long\n    prompt: "sleep 30000"\n  - name: last\n    prompt: "write {{OUTPUT_FILE}} finished {{TICKET_ID}}"\n`);
    writeFileSync(path.join(daemon.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "survive", ticketType: "TASK" });
    await waitFor("the long step", () => readState(daemon.home).agents[0]?.current_step === "long");
    trackAgents(root);
    const before = readState(daemon.home).agents[0];
    await daemon.crash();

    // The workflow's long step is now short: the re-prompted agent gets the current text.
    writeWorkflow(root, "TASK", `steps:\n  - name: first\n    prompt: "echo first"\n  - name: long\n    prompt: "sleep 100"\n  - name: last\n    prompt: "write {{OUTPUT_FILE}} finished {{TICKET_ID}}"\n`);
    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    // A workflow edited by hand asks for trust again: the ticket waits in progress (not failed) until then.
    await waitFor("the ticket to wait for pu trust", () => daemonLog(restarted.home).find((e) => e.event === "ticket_awaiting_trust"));
    expect(readState(restarted.home).agents[0]).toMatchObject({ ticket_id: "TASK-0001", status: "awaiting_input", last_message: expect.stringContaining("pu trust") });
    expect(daemonLog(restarted.home).find((e) => e.event === "ticket_continued")).toBeUndefined();
    await trustProject(client2, root);
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    const state = readState(restarted.home);
    expect(state.completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "finished TASK-0001" });
    const continued = daemonLog(restarted.home).find((e) => e.event === "ticket_continued");
    expect(continued).toMatchObject({ ticketId: "TASK-0001", step: "long" });
    expect(continued?.agentId).not.toBe(before?.session_name);
    const history = ((await client2.request("ticket_show", { projectRoot: root, ticketId: "TASK-0001" })).ticket.history as { event: string; step?: string }[]).map((h) => h.event);
    expect(history).toContain("continued after a daemon restart");
    expect(history.filter((e) => e === "step done")).toHaveLength(3);
  }, 90_000);
});
