// Plan sessions where something is wrong, through the real `pu` binary and daemon with the
// scripted role agents (tests/fixtures/plan-role.mjs): a role's program that is not installed
// (refused up front), a blockedBy cycle made by hand (named in the failure and in status), a
// corrupt session.json (listed as unreadable), a daemon stopped while it wrote the accepted
// tasks (settled from the proposals on restart), cancel (no task left in progress), a session.json
// corrupted while its workers run (named, kept, waited for), and a COMPLETE plan merged by
// `pu plan merge` with the refusals of `pu merge`.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox, REPO_ROOT, allAgents } from "../helpers/pu-sandbox.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";

const PLAN_ROLE = path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs");

interface PlanJson {
  sessionId: string;
  phase: string;
  branch: string;
  dir: string;
  failure: string | null;
  problems: string[];
  tasks: { id: string; status: string; blockedBy: string[]; worker?: string }[];
}
interface EvidenceJson {
  evidenceLog: { type: string; status?: string; summary?: string }[];
}

const task = (id: string, blockedBy: string[] = []) => ({ id, subject: `make ${id}.txt`, description: `write ${id}.txt`, blockedBy, criteria: [`${id}.txt exists`] });
const CYCLE = "cycle: a → b → a (break it by removing one blockedBy)";
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("plan sessions when something is wrong", { timeout: 240_000 }, () => {
  let sb: PuSandbox;
  let config: string;
  const configText = (workerType: string) =>
    [
      "defaultAgent: planbot",
      "agents:",
      `  planbot: { command: ${JSON.stringify(`${process.execPath} ${PLAN_ROLE}`)} }`,
      "  ghost: { command: no-such-agent-cli }",
      "plan:",
      `  agents: { explorer: planbot, planner: planbot, worker: ${workerType}, verifier: planbot }`,
      "",
    ].join("\n");

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-plan-hardening-");
    await sb.ok(["init"]);
    config = path.join(sb.root, ".pu/config.yaml");
    writeFileSync(config, configText("planbot"));
    await sb.ok(["trust"]);
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 4\n");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  const scenario = async (name: string, value: unknown): Promise<void> => {
    const file = path.join(sb.base, `${name}.json`);
    writeFileSync(file, JSON.stringify(value));
    // The daemon (and so every role agent) reads the scenario from its environment.
    await sb.ok(["daemon", "restart"], { env: { PLAN_TEST_SCENARIO: file } });
  };
  const status = (id: string) => sb.puJson<PlanJson>(["plan", "status", id]);
  const phase = (id: string, wanted: string, timeoutMs = 90_000) =>
    waitFor(`plan ${id} to be ${wanted}`, async () => {
      const plan = await status(id);
      return plan.phase === wanted ? plan : undefined;
    }, timeoutMs, 250);

  it("a role's program that is not installed is refused up front, naming it; no session is made", async () => {
    writeFileSync(config, configText("ghost"));
    await sb.ok(["trust"]);
    const run = await sb.pu(["plan", "start", "needs a ghost"]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/agent type 'ghost' cannot start: command 'no-such-agent-cli' not found on PATH/);
    expect((await sb.puJson<{ plans: unknown[] }>(["plan", "list"])).plans).toEqual([]);
    writeFileSync(config, configText("planbot"));
    await sb.ok(["trust"]);
  });

  it("a blockedBy cycle made by hand is named in the failure and in pu plan status; a corrupt session.json is listed as unreadable", async () => {
    await scenario("cycle", { tasks: [task("a"), task("b", ["a"])] });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "two files", "--plan-only", "--auto", "--skip-verify"]);
    // Edited only once pu is done with the plan (approved, stopped for --plan-only): an edit while it
    // still reads the accepted tasks fails the session before `pu plan run`.
    const planned = await waitFor("the plan approved and stopped", async () => {
      const plan = await status(sessionId);
      if (plan.tasks.length === 0) return undefined;
      const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
      return evidence.evidenceLog.some((e) => e.type === "plan_approved") ? plan : undefined;
    }, 60_000);
    expect(planned.problems).toEqual([]);
    const taskFile = path.join(planned.dir, "tasks", "a.json");
    writeFileSync(taskFile, readFileSync(taskFile, "utf8").replace('"blockedBy": []', '"blockedBy": ["b"]'));
    expect((await status(sessionId)).problems).toEqual([CYCLE]);
    expect(await sb.ok(["plan", "status", sessionId])).toContain(`  problem: ${CYCLE}`);

    await sb.ok(["plan", "run", sessionId]);
    const failed = await phase(sessionId, "FAILED");
    expect(failed.failure).toBe(`the task graph cannot run: ${CYCLE}`);
    expect(await sb.ok(["plan", "status", sessionId])).toContain(`  failed: the task graph cannot run: ${CYCLE}`);
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.at(-1)).toMatchObject({ type: "phase", status: "FAILED", summary: expect.stringContaining("cycle: a → b → a") });

    // A session.json that no longer parses: listed with its file and why, not left out.
    const sessionFile = path.join(planned.dir, "session.json");
    writeFileSync(sessionFile, "{ not json");
    const list = await sb.puJson<{ plans: PlanJson[]; unreadable: { sessionId: string; file: string; reason: string }[] }>(["plan", "list"]);
    expect(list.plans.map((p) => p.sessionId)).not.toContain(sessionId);
    expect(list.unreadable).toEqual([{ sessionId, file: sessionFile, reason: expect.stringMatching(/^not valid JSON/) }]);
    expect(await sb.ok(["plan", "list"])).toMatch(new RegExp(`${sessionId}  UNREADABLE +${sessionFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not valid JSON`));
    // Reported, never repaired.
    expect(readFileSync(sessionFile, "utf8")).toBe("{ not json");
  });

  it("a daemon stopped while it wrote the accepted tasks: the next one takes the plan again, whole, from the planner's proposals", async () => {
    const proposals = [task("a"), task("b", ["a"]), task("c", ["a"])];
    await scenario("settle", { tasks: proposals, plannerSlowMs: 5000 });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "three files", "--plan-only", "--skip-verify"]);
    // Approving while the planner is still at work is refused, in one line.
    await phase(sessionId, "PLANNING");
    const early = await sb.pu(["plan", "approve", sessionId]);
    expect(early.code).toBe(1);
    expect(early.stderr.trim()).toBe(`pu: plan ${sessionId} has no accepted tasks yet (the planner is still at work)`);
    const planned = await waitFor("the plan accepted", async () => {
      const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
      return evidence.evidenceLog.some((e) => e.type === "plan_accepted") ? status(sessionId) : undefined;
    }, 60_000);
    expect(planned.tasks.map((t) => t.id)).toEqual(["a", "b", "c"]);
    await sb.ok(["daemon", "stop"]);

    // The files as a daemon killed between writing task b and task c leaves them: the planner's
    // proposals still there, some task files, and a session without the acceptance.
    const sessionFile = path.join(planned.dir, "session.json");
    const session = JSON.parse(readFileSync(sessionFile, "utf8")) as { evidence_log: { type: string }[] };
    session.evidence_log = session.evidence_log.filter((e) => e.type !== "plan_accepted");
    writeFileSync(sessionFile, `${JSON.stringify(session, null, 2)}\n`);
    rmSync(path.join(planned.dir, "tasks", "c.json"));
    for (const proposal of proposals) writeFileSync(path.join(planned.dir, "proposed", `${proposal.id}.json`), JSON.stringify(proposal));
    // A planner started again would now plan something else.
    await scenario("settle-replanned", { tasks: [task("x")] });

    const settled = await waitFor("the plan accepted again", async () => {
      const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
      return evidence.evidenceLog.some((e) => e.type === "plan_accepted") ? status(sessionId) : undefined;
    }, 60_000);
    expect(settled.phase).toBe("PLANNING");
    expect(settled.tasks.map((t) => [t.id, t.blockedBy])).toEqual([["a", []], ["b", ["a"]], ["c", ["a"]]]);
    expect(readdirSync(path.join(planned.dir, "proposed"))).toEqual([]);
    const agents = Object.values((await sb.status()).agents).map((a) => a.name);
    expect(agents.filter((name) => name.startsWith(`plan-${sessionId}-planner`))).toHaveLength(1);

    await sb.ok(["plan", "run", sessionId]);
    const done = await phase(sessionId, "COMPLETE");
    expect(done.tasks.map((t) => t.status)).toEqual(["resolved", "resolved", "resolved"]);
  });

  it("cancel leaves no task in progress: the task its worker was on is failed, with the reason in the evidence", async () => {
    await scenario("cancel", { tasks: [task("a")], slowMs: 600_000 });
    const { sessionId } = await sb.puJson<PlanJson>(["plan", "start", "slow", "--auto", "--skip-verify"]);
    await waitFor("a worker on task a", async () => (await status(sessionId)).tasks.find((t) => t.id === "a")?.worker, 60_000);
    const cancelled = await sb.puJson<PlanJson>(["plan", "cancel", sessionId]);
    expect(cancelled.phase).toBe("CANCELLED");
    expect(cancelled.tasks.map((t) => [t.id, t.status])).toEqual([["a", "failed"]]);
    const onDisk = JSON.parse(readFileSync(path.join(cancelled.dir, "tasks", "a.json"), "utf8")) as { status: string };
    expect(onDisk.status).toBe("failed");
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.some((e) => e.type === "task_failed" && /cancelled/.test(e.summary ?? ""))).toBe(true);
    // Only a COMPLETE plan is merged by pu.
    const merge = await sb.pu(["plan", "merge", sessionId]);
    expect(merge.code).toBe(1);
    expect(merge.stderr).toMatch(/is CANCELLED, not COMPLETE/);
  });

  it("a session.json corrupted while its workers run: named by status, list and cancel, never written over; the worker waits and the session goes on once it is restored, across a daemon restart too", async () => {
    const corruptScenario = { tasks: [task("a"), task("b", ["a"])], slowMs: 3000 };
    await scenario("corrupt", corruptScenario);
    const { sessionId, dir } = await sb.puJson<PlanJson>(["plan", "start", "two slow files", "--auto", "--skip-verify"]);
    const sessionFile = path.join(dir, "session.json");
    const log = path.join(sb.home, "daemon.log");
    const waits = () => readFileSync(log, "utf8").split("\n").filter((line) => line.includes('"event":"plan_file_unreadable"')).length;
    const waitingFor = (before: number) => waitFor("the driver waiting for session.json", () => waits() > before || undefined, 60_000, 200);
    const workerOn = (id: string) => waitFor(`a worker on task ${id}`, async () => (await status(sessionId)).tasks.find((t) => t.id === id)?.worker, 60_000);
    const garbage = "garbage {";
    const unreadable = `${escapeRegExp(sessionFile)} cannot be read: not valid JSON \\(.*\\); pu keeps the file as it is, never writing over it; its 1 agent\\(s\\) keep running`;

    const workerA = await workerOn("a");
    const good = readFileSync(sessionFile, "utf8");
    writeFileSync(sessionFile, garbage);
    // pu plan status: one line naming the file and what is wrong.
    const shown = await sb.pu(["plan", "status", sessionId]);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toMatch(new RegExp(`^pu: plan ${sessionId}: ${unreadable}; the session waits for the file to be fixed or restored, then goes on\\n$`));
    expect(await sb.ok(["plan", "list"])).toMatch(new RegExp(`${sessionId}  UNREADABLE +${escapeRegExp(sessionFile)}: not valid JSON`));
    // pu plan cancel: refused in one line (exit 1, a failure), before anything is stopped; the file and why in --json's details.
    const cancel = await sb.pu(["plan", "cancel", sessionId, "--json"]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(new RegExp(`^pu: plan ${sessionId} is not cancelled: ${unreadable}; fix or restore the file, then run \`pu plan cancel ${sessionId}\` again\\n$`));
    expect(JSON.parse(cancel.stdout)).toEqual({ error: { code: "INVALID_STATE", message: expect.any(String), details: { file: sessionFile, reason: expect.stringMatching(/^not valid JSON/) } } });

    // The worker's turn ends while the file is still garbage: pu waits for the file, the worker at its prompt.
    await waitFor("worker a's turn over", () => existsSync(path.join(dir, "reports", "a.md")) || undefined, 60_000);
    await waitingFor(0);
    const agentA = allAgents(await sb.status()).find((a) => a.id === workerA);
    expect(agentA).toMatchObject({ live: true, status: "waiting" });
    expect(isProcessAlive(agentA?.pid ?? 0)).toBe(true);
    expect(readFileSync(sessionFile, "utf8")).toBe(garbage);

    // Restored: the same worker's task resolves, and the next one starts.
    writeFileSync(sessionFile, good);
    await workerOn("b");
    const evidence = await sb.puJson<EvidenceJson & { tasks: { id: string; evidence: string[] }[] }>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.filter((e) => e.type === "task_started").map((e) => e.summary)).toEqual(["worker started on a", "worker started on b"]);
    expect(evidence.evidenceLog).toContainEqual(expect.objectContaining({ type: "task_resolved", summary: "resolved after 1 turn(s)" }));
    expect(evidence.evidenceLog).toContainEqual(expect.objectContaining({ type: "files_unreadable", status: "recovered", summary: expect.stringContaining(`${sessionFile} could not be read from `) }));

    // Corrupt again while b's worker runs, and the daemon restarts meanwhile (its agents benched):
    // the new daemon waits for the file too, then gives task b a worker again and finishes.
    const goodAgain = readFileSync(sessionFile, "utf8");
    writeFileSync(sessionFile, garbage);
    const before = waits();
    await scenario("corrupt", corruptScenario);
    await waitingFor(before);
    expect(readFileSync(sessionFile, "utf8")).toBe(garbage);
    writeFileSync(sessionFile, goodAgain);
    const done = await phase(sessionId, "COMPLETE");
    expect(done.tasks.map((t) => [t.id, t.status])).toEqual([["a", "resolved"], ["b", "resolved"]]);
  });

  it("a COMPLETE plan says pu plan merge, which merges its branch into main with pu merge's refusals", async () => {
    await scenario("merge", { tasks: [task("a"), task("b", ["a"])] });
    const { sessionId, branch } = await sb.puJson<PlanJson>(["plan", "start", "two files to merge", "--auto"]);
    await phase(sessionId, "COMPLETE");
    const evidence = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(evidence.evidenceLog.at(-1)?.summary).toBe(`verified in iteration 1; ${branch} is ready for \`pu plan merge ${sessionId}\``);

    // The base's checkout has uncommitted changes: refused, nothing merged (as pu merge refuses).
    const mainBefore = sb.git(["rev-parse", "main"]);
    writeFileSync(path.join(sb.root, "README.md"), "edited, not committed\n");
    const dirty = await sb.pu(["plan", "merge", sessionId]);
    expect(dirty.code).toBe(1);
    expect(dirty.stderr).toMatch(/main is checked out at .* with uncommitted changes \(README\.md\)/);
    expect(sb.git(["rev-parse", "main"])).toBe(mainBefore);
    sb.git(["checkout", "--", "README.md"]);

    const merged = await sb.ok(["plan", "merge", sessionId]);
    expect(merged).toMatch(new RegExp(`^merged ${branch} into main \\(merge\\) at [0-9a-f]{12}\\n$`));
    expect(sb.git(["show", "main:a.txt"])).toContain("task a done");
    expect(sb.git(["show", "main:b.txt"])).toContain("a:present");
    expect(await sb.ok(["plan", "merge", sessionId])).toBe(`nothing to merge: main already holds ${branch}\n`);
    const after = await sb.puJson<EvidenceJson>(["plan", "evidence", sessionId]);
    expect(after.evidenceLog.filter((e) => e.type === "merged").map((e) => e.summary)).toEqual([
      expect.stringMatching(new RegExp(`^merged ${branch} into main \\(merge\\)`)),
      `nothing to merge: main already holds ${branch}`,
    ]);
  });
});
