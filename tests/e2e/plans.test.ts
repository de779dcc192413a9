// Plan sessions end to end through the real `pu` binary and daemon, with scripted role agents
// (tests/fixtures/plan-role.mjs) playing explorer, planner, worker and verifier through the
// files-and-environment contract: a planner whose first plan has a cycle (typed back), approval,
// a task graph worked by at most 2 workers at once (counted from the status stream), a failing
// check retried, dependents that see their blockers' work, a verification that fails once, and
// cancel.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allAgents, PuSandbox, REPO_ROOT, type StatusJson } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

const PLAN_ROLE = path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs");

interface PlanJson {
  sessionId: string;
  phase: string;
  iteration: number;
  approvedAt: string | null;
  branch: string;
  dir: string;
  tasks: { id: string; status: string; blockedBy: string[]; worker?: string }[];
}
interface EvidenceJson {
  evidenceLog: { type: string; task_id?: string; status?: string; command?: string; exit_code?: number; summary?: string }[];
  tasks: { id: string; evidence: string[] }[];
}

const task = (id: string, blockedBy: string[] = []) => ({ id, subject: `make ${id}.txt`, description: `write ${id}.txt`, blockedBy, criteria: [`${id}.txt exists`] });

describe("plan sessions", { timeout: 240_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-plans-");
    await sb.ok(["init"]);
    const config = path.join(sb.root, ".pu/config.yaml");
    writeFileSync(config, `${readFileSync(config, "utf8")}\nagents:\n  planbot:\n    command: ${process.execPath} ${PLAN_ROLE}\nplan:\n  agents: { explorer: planbot, planner: planbot, worker: planbot, verifier: planbot }\n  verify: ["test -f a.txt"]\n`);
    await sb.ok(["trust"]);
    // The queue's default cap is the machine's cores - 1; these tests set their own.
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 4\n");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  const scenarioFile = (name: string, scenario: unknown): string => {
    const file = path.join(sb.base, `${name}.json`);
    writeFileSync(file, JSON.stringify(scenario));
    return file;
  };

  it("goal → exploration → a plan typed back once, approved → 4 tasks by ≤ 2 workers → verification that loops once → COMPLETE", async () => {
    const scenario = scenarioFile("full", {
      hints: [{ id: "exp-1", hint: "look at the tests" }],
      badTasks: [task("a", ["d"]), task("b", ["a"]), task("c", ["a"]), task("d", ["b", "c"])],
      tasks: [task("a"), task("b", ["a"]), task("c", ["a"]), task("d", ["b", "c"])],
      failCheckOnce: ["b"],
      verifyFailOnce: "c",
      slowMs: 800,
    });
    // The daemon (and so every role agent) reads the scenario from its environment.
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const watcher = sb.startPu(["status", "--watch", "--json"]);
    const started = await sb.puJson<PlanJson>(["plan", "start", "make four files", "--max-workers", "2"]);
    expect(started.phase).toBe("EXPLORATION");
    const id = started.sessionId;
    expect(readFileSync(path.join(started.dir, "session.json"), "utf8")).toContain('"version": "5.0"');

    // Without --auto the session stops for approval once the (second, valid) plan is in.
    const planned = await waitFor("the plan to wait for approval", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", id]);
      return plan.phase === "PLANNING" && plan.tasks.length > 0 ? plan : undefined;
    }, 60_000);
    expect(planned.approvedAt).toBeNull();
    // What a person reads before approving: the design, then the graph.
    const shown = await sb.ok(["plan", "show", id]);
    expect(shown).toMatch(/# Design[\s\S]*open\s+d: make d\.txt ← b, c/);
    expect(planned.tasks.map((t) => t.id)).toEqual(["a", "b", "c", "d", "verify"]);
    const context = JSON.parse(readFileSync(path.join(started.dir, "context.json"), "utf8")) as { exploration_complete: boolean; expected_explorers: string[] };
    expect(context).toMatchObject({ exploration_complete: true, expected_explorers: ["overview", "exp-1"] });
    const early = await sb.puJson<EvidenceJson>(["plan", "evidence", id]);
    expect(early.evidenceLog.some((e) => e.type === "plan_rejected" && /cycle/.test(e.summary ?? ""))).toBe(true);

    await sb.ok(["plan", "approve", id]);
    const done = await waitFor("the session to complete", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", id]);
      if (plan.phase === "FAILED") throw new Error(`plan failed: ${JSON.stringify(await sb.puJson(["plan", "evidence", id]))}`);
      return plan.phase === "COMPLETE" ? plan : undefined;
    }, 180_000, 500);
    expect(done.iteration).toBe(2);
    expect(done.tasks.every((t) => t.status === "resolved")).toBe(true);
    expect(done.tasks.map((t) => t.id)).toContain("fix-2-1");

    // The integration branch has every task's work; d saw b and c, which it waited for.
    const files = execFileSync("git", ["ls-tree", "--name-only", done.branch], { cwd: sb.root, encoding: "utf8" }).split("\n");
    expect(files).toEqual(expect.arrayContaining(["a.txt", "b.txt", "c.txt", "d.txt"]));
    const d = execFileSync("git", ["show", `${done.branch}:d.txt`], { cwd: sb.root, encoding: "utf8" });
    expect(d).toContain("b:present c:present");

    // Evidence is what pu ran: b's failing check is recorded, then its passing one.
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", id]);
    const bChecks = evidence.evidenceLog.filter((e) => e.task_id === "b" && e.command);
    expect(bChecks.map((e) => e.status)).toEqual(["failed", "passed"]);
    expect(evidence.evidenceLog.some((e) => e.command === "test -f a.txt" && e.exit_code === 0)).toBe(true);
    // The verify task resolved with evidence (the schema's "completed with evidence"): its command in each iteration, and the verdicts.
    const verifyTask = JSON.parse(readFileSync(path.join(started.dir, "tasks/verify.json"), "utf8")) as { status: string; evidence: string[] };
    expect(verifyTask.status).toBe("resolved");
    expect(verifyTask.evidence.filter((line) => /^passed: test -f a\.txt: exit 0/.test(line))).toHaveLength(2);
    expect(verifyTask.evidence.at(-1)).toMatch(/^passed: the verifier's verdict for iteration 2 \(verification\/iteration-2\.json\)$/);
    expect(verifyTask.evidence.some((line) => /^FAILED: the verifier's verdict for iteration 1 .*c: not good enough yet/.test(line))).toBe(true);

    // Never more than 2 workers alive at once, counted over every status event.
    watcher.child.kill("SIGINT");
    await watcher.exited;
    const lines = watcher.output().trim().split("\n").filter(Boolean);
    let most = 0;
    for (const line of lines) {
      const { report } = JSON.parse(line) as { report: StatusJson };
      // A worker runs in the worktree named after its task.
      const workers = Object.values(report.worktrees)
        .filter((w) => new RegExp(`^plan-${id}-[a-d]$`).test(w.name))
        .flatMap((w) => Object.values(w.agents))
        .filter((a) => a.live).length;
      most = Math.max(most, workers);
    }
    expect(lines.length).toBeGreaterThan(5);
    expect(most).toBe(2);
  });

  it("cancel stops every agent of the session and keeps its files", async () => {
    const scenario = scenarioFile("cancel", { tasks: [task("a"), task("b")], slowMs: 60_000 });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "slow work", "--auto", "--skip-verify"]);
    const working = await waitFor("workers to run", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      return plan.tasks.filter((t) => t.worker).length === 2 ? plan : undefined;
    }, 60_000);
    const workerIds = working.tasks.map((t) => t.worker!);
    const cancelled = await sb.puJson<PlanJson>(["plan", "cancel", sessionId]);
    expect(cancelled.phase).toBe("CANCELLED");
    // A cancel is a stop of unfinished work: not recorded as finished by the plan.
    for (const agentId of workerIds) {
      const worker = await sb.agent(agentId);
      expect(worker).toMatchObject({ live: false, status: "broken" });
      expect(worker).not.toHaveProperty("finishedBy");
    }
    const session = JSON.parse(readFileSync(path.join(cancelled.dir, "session.json"), "utf8")) as { cancelled_at: string | null };
    expect(session.cancelled_at).not.toBeNull();
    // A cancelled session stays cancelled.
    expect((await sb.pu(["plan", "cancel", sessionId])).code).not.toBe(0);
  });

  it("--plan-only stops after the plan; pu plan run approves and goes on; a dangling blockedBy is typed back", async () => {
    const scenario = scenarioFile("plan-only", { badTasks: [task("a"), task("b", ["zz"])], tasks: [task("a"), task("b", ["a"])] });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "two files", "--plan-only", "--auto", "--skip-verify"]);
    const planned = await waitFor("the plan", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      return plan.tasks.length > 0 ? plan : undefined;
    }, 60_000);
    // --skip-verify: no verify task; --auto approved it, --plan-only holds it in PLANNING.
    expect(planned.tasks.map((t) => t.id)).toEqual(["a", "b"]);
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.find((e) => e.type === "plan_rejected")?.summary).toMatch(/zz/);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await sb.puJson<PlanJson>(["plan", "status", sessionId])).phase).toBe("PLANNING");
    // What a person reads names the command that goes on: run, not approve (it would change nothing here).
    expect(await sb.ok(["plan", "status", sessionId])).toContain(`--plan-only: \`pu plan run ${sessionId}\` starts the workers`);
    // Approving is refused once done; run goes on.
    await sb.ok(["plan", "run", sessionId]);
    const done = await waitFor("the session to complete", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      return plan.phase === "COMPLETE" ? plan : undefined;
    }, 60_000, 500);
    expect(done.tasks.every((t) => t.status === "resolved")).toBe(true);
    // Every role agent (explorers, planner, workers) was stopped by the plan after its part: finished, not failed.
    const status = await sb.status();
    const prefix = `plan-${sessionId}-`;
    const roleAgents = [
      ...Object.values(status.agents).filter((a) => a.name.startsWith(prefix)),
      ...Object.values(status.worktrees).filter((w) => w.name.startsWith(prefix)).flatMap((w) => Object.values(w.agents)),
    ];
    expect(roleAgents.length).toBeGreaterThanOrEqual(4);
    for (const agent of roleAgents) expect([agent.name, agent.status, agent.finishedBy]).toEqual([agent.name, "broken", "plan"]);
  });

  it("a SIGKILLed daemon loses nothing: the next one re-prompts the task in its worktree and completes", async () => {
    const scenario = scenarioFile("sigkill", { tasks: [task("a"), task("b", ["a"])], slowMs: 2500 });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "survive a crash", "--auto", "--skip-verify"]);
    await waitFor("task a in progress", async () => (await sb.puJson<PlanJson>(["plan", "status", sessionId])).tasks.find((t) => t.id === "a")?.worker, 60_000);
    await sb.sigkillDaemon();
    // Any command starts the next daemon, which resumes the session.
    await sb.ok(["health"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const done = await waitFor("the session to complete after the crash", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      if (plan.phase === "FAILED") throw new Error(JSON.stringify(await sb.puJson(["plan", "evidence", sessionId])));
      return plan.phase === "COMPLETE" ? plan : undefined;
    }, 90_000, 500);
    expect(done.tasks.map((t) => t.status)).toEqual(["resolved", "resolved"]);
    const b = execFileSync("git", ["show", `${done.branch}:b.txt`], { cwd: sb.root, encoding: "utf8" });
    expect(b).toContain("a:present");
  });

  it("a daemon restart mid-task: the task's new worker is the only one; the benched worker it replaced is ended and cannot be played", async () => {
    const scenario = scenarioFile("restart", { tasks: [task("a"), task("b", ["a"])], slowMs: 6000 });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "outlive a restart", "--auto", "--skip-verify"]);
    const old = await waitFor("task a's worker", async () => (await sb.puJson<PlanJson>(["plan", "status", sessionId])).tasks.find((t) => t.id === "a")?.worker, 60_000);
    // A graceful restart benches every running agent, the worker too.
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const fresh = await waitFor("task a's new worker", async () => {
      const worker = (await sb.puJson<PlanJson>(["plan", "status", sessionId])).tasks.find((t) => t.id === "a")?.worker;
      return worker && worker !== old ? worker : undefined;
    }, 60_000);
    const worktree = Object.values((await sb.status()).worktrees).find((w) => w.name === `plan-${sessionId}-a`)!;
    const agents = Object.values(worktree.agents);
    expect(agents.filter((a) => a.suspended)).toEqual([]);
    expect(agents.filter((a) => a.status !== "broken").map((a) => a.id)).toEqual([fresh]);
    expect(agents.find((a) => a.id === old)).toMatchObject({ status: "broken", finishedBy: "plan", replacedBy: fresh });
    const play = await sb.pu(["play", old]);
    expect(play.code).not.toBe(0);
    expect(play.stderr).toContain(`${old} is not suspended`);
    const done = await waitFor("the session to complete after the restart", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      if (plan.phase === "FAILED") throw new Error(JSON.stringify(await sb.puJson(["plan", "evidence", sessionId])));
      return plan.phase === "COMPLETE" ? plan : undefined;
    }, 90_000, 500);
    expect(done.tasks.map((t) => t.status)).toEqual(["resolved", "resolved"]);
    expect(allAgents(await sb.status()).filter((a) => a.suspended)).toEqual([]);
  });

  it("verification failing at the iteration limit ends the session FAILED with the reasons", async () => {
    const scenario = scenarioFile("limit", { tasks: [task("a")], verifyFailOnce: "a" });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "never good enough", "--auto", "--max-iterations", "1"]);
    const failed = await waitFor("the session to fail", async () => {
      const plan = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
      return plan.phase === "FAILED" ? plan : undefined;
    }, 90_000, 500);
    expect(failed.iteration).toBe(1);
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.at(-1)?.summary).toMatch(/iteration limit.*not good enough yet/);
  });

  it("plan workers wait while the queue is paused and count against its caps", async () => {
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    const scenario = scenarioFile("paused", { tasks: [task("a"), task("b"), task("c")], slowMs: 600 });
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: scenario } });
    await sb.ok(["queue", "pause"]);
    const watcher = sb.startPu(["status", "--watch", "--json"]);
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "three files", "--auto", "--skip-verify", "--max-workers", "3"]);
    await waitFor("the plan to reach execution", async () => (await sb.puJson<PlanJson>(["plan", "status", sessionId])).phase === "EXECUTION", 60_000);
    // Paused: the session sits in EXECUTION with nothing started.
    const held = await sb.puJson<PlanJson>(["plan", "status", sessionId]);
    expect(held.tasks.every((t) => t.status === "open" && !t.worker)).toBe(true);
    await sb.ok(["queue", "resume"]);
    await waitFor("the session to complete", async () => (await sb.puJson<PlanJson>(["plan", "status", sessionId])).phase === "COMPLETE", 90_000, 500);
    watcher.child.kill("SIGINT");
    await watcher.exited;
    let most = 0;
    for (const line of watcher.output().trim().split("\n").filter(Boolean)) {
      const { report } = JSON.parse(line) as { report: StatusJson };
      const live = Object.values(report.worktrees)
        .filter((w) => new RegExp(`^plan-${sessionId}-[a-c]$`).test(w.name))
        .flatMap((w) => Object.values(w.agents))
        .filter((a) => a.live).length;
      most = Math.max(most, live);
    }
    // queue.maxParallel 1 wins over --max-workers 3.
    expect(most).toBe(1);
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 4\n");
  });
});
