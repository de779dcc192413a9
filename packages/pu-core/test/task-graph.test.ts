import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { DEFAULT_SESSION_OPTIONS, type Task, type TaskStatus } from "../src/plan-files.js";
import {
  applyVerdict,
  compareTaskIds,
  executionState,
  explorationProgress,
  formatProposalErrors,
  pickTasksToStart,
  readyTasks,
  stuckReason,
  taskGraphErrors,
  unreachableTasks,
  validateTaskProposals,
  withVerifyTask,
  type ProposalFile,
} from "../src/task-graph.js";

function task(id: string, blockedBy: string[] = [], status: TaskStatus = "open"): Task {
  return {
    id,
    subject: `Task ${id}`,
    description: `Do ${id}`,
    status,
    blockedBy,
    complexity: "standard",
    criteria: [`${id} works`],
    evidence: [],
  };
}

function proposal(id: string, fields: Record<string, unknown> = {}): ProposalFile {
  return { name: `${id}.json`, text: JSON.stringify({ id, subject: `Task ${id}`, criteria: [`${id} works`], ...fields }) };
}

const ids = (tasks: readonly { id: string }[]) => tasks.map((t) => t.id);

/** Sets statuses by id, leaving the graph as it is. */
function withStatus(tasks: Task[], statuses: Record<string, TaskStatus>): Task[] {
  return tasks.map((t) => (statuses[t.id] ? { ...t, status: statuses[t.id] as TaskStatus } : t));
}

describe("validating the planner's proposals", () => {
  it("accepts a sound graph and returns it in id order (2 before 10)", () => {
    const result = validateTaskProposals([
      proposal("10", { blockedBy: ["2"] }),
      proposal("2", { blockedBy: ["1"] }),
      proposal("1"),
      proposal("docs", { blockedBy: ["1", "10"] }),
    ]);
    expect(result.errors).toEqual([]);
    expect(ids(result.tasks)).toEqual(["1", "2", "10", "docs"]);
    expect(result.tasks[0]).toMatchObject({ status: "open", evidence: [], complexity: "standard" });
  });

  it("reports every problem at once: dangling, self, cycle path, empty criteria, file/id mismatch, reserved id", () => {
    const result = validateTaskProposals([
      proposal("1", { blockedBy: ["3"] }),
      proposal("2", { blockedBy: ["1"] }),
      proposal("3", { blockedBy: ["2"] }),
      proposal("4", { blockedBy: ["4", "99"] }),
      proposal("5", { criteria: [] }),
      { name: "6.json", text: JSON.stringify({ id: "7", subject: "x", criteria: ["c"] }) },
      proposal("verify"),
      { name: "8.json", text: "{ not json" },
      proposal("9", { blockedBy: ["8"] }),
    ]);
    expect(result.errors).toEqual([
      "proposed/5.json: criteria: must list at least one success criterion",
      'proposed/6.json: id: "7" does not match the file name (rename the file to 7.json or fix the id)',
      expect.stringMatching(/^proposed\/8\.json: not valid JSON/),
      'proposed/verify.json: id: "verify" is reserved (pu adds the verify task itself); pick another id',
      "task 4: blockedBy names the task itself",
      'task 4: blockedBy names "99", which is not a task',
      "cycle: 1 → 3 → 2 → 1 (break it by removing one blockedBy)",
    ]);
    // A proposal that did not parse is reported once, not again as "not a task" for 9.
    expect(result.errors.join("\n")).not.toContain('"8", which is not a task');
  });

  it("reports each of two separate cycles once, and an empty plan", () => {
    const errors = taskGraphErrors([task("a", ["b"]), task("b", ["a"]), task("c", ["d"]), task("d", ["e"]), task("e", ["c"])]);
    expect(errors).toEqual([
      "cycle: a → b → a (break it by removing one blockedBy)",
      "cycle: c → d → e → c (break it by removing one blockedBy)",
    ]);
    expect(validateTaskProposals([]).errors).toEqual([
      "proposed/: no task proposals (write one JSON file per task, proposed/<id>.json)",
    ]);
  });

  it("reports duplicate ids and a blocker listed twice", () => {
    expect(taskGraphErrors([task("1"), task("1"), task("2", ["1", "1"])])).toEqual([
      "task 1: the id is used by more than one task",
      'task 2: blockedBy lists "1" twice',
    ]);
  });

  it("refuses a file name that is not a task id, and another spelling of blockedBy", () => {
    const result = validateTaskProposals([
      { name: "../evil.json", text: "{}" },
      { name: "2.json", text: JSON.stringify({ id: "2", subject: "s", criteria: ["c"], blocked_by: ["1"] }) },
    ]);
    expect(result.errors).toEqual([
      'proposed/2.json: blocked_by: is not read; spell it "blockedBy"',
      "proposed/../evil.json: the file name must be <task id>.json (letters, digits, '_' and '-')",
    ]);
  });

  it("formats the errors as one message a planner can act on", () => {
    const message = formatProposalErrors(["task 4: blockedBy names the task itself", "cycle: 1 → 2 → 1"]);
    expect(message.split("\n")).toEqual([
      "pu did not accept the task proposals (2 problems):",
      "- task 4: blockedBy names the task itself",
      "- cycle: 1 → 2 → 1",
      "Fix the files in proposed/ (one JSON file per task) and end your turn; pu checks them again.",
    ]);
  });
});

describe("the verify task", () => {
  it("is added blocked by every other task, unless skip_verify", () => {
    const tasks = withVerifyTask([task("2"), task("1", [])], { skip_verify: false });
    expect(ids(tasks)).toEqual(["1", "2", "verify"]);
    expect(tasks[2]).toMatchObject({ id: "verify", status: "open", blockedBy: ["1", "2"] });
    expect(taskGraphErrors(tasks)).toEqual([]);
    expect(ids(withVerifyTask([task("1")], { skip_verify: true }))).toEqual(["1"]);
  });

  it("never counts itself: all work resolved means verification is due", () => {
    const tasks = withStatus(withVerifyTask([task("1"), task("2", ["1"])], DEFAULT_SESSION_OPTIONS), {
      "1": "resolved",
      "2": "resolved",
    });
    expect(executionState(tasks)).toEqual({ kind: "done" });
    expect(readyTasks(tasks)).toEqual([]); // verify is the verifier's, not a worker's
  });
});

describe("execution", () => {
  // 1 ← 2 ← 4, 1 ← 3, 5 independent, 6 ← 4 and 5
  const graph = withVerifyTask(
    [task("1"), task("2", ["1"]), task("3", ["1"]), task("4", ["2"]), task("5"), task("6", ["4", "5"])],
    DEFAULT_SESSION_OPTIONS,
  );

  it("a task is ready when it is open and every blocker is resolved", () => {
    expect(ids(readyTasks(graph))).toEqual(["1", "5"]);
    expect(ids(readyTasks(withStatus(graph, { "1": "resolved", "5": "in_progress" })))).toEqual(["2", "3"]);
    // in_progress is not resolved: a dependent waits for the merge, not the start.
    expect(ids(readyTasks(withStatus(graph, { "1": "in_progress" })))).toEqual(["5"]);
  });

  it("picks under max_workers and the queue's free slots, in id order", () => {
    const afterOne = withStatus(graph, { "1": "resolved" });
    expect(ids(pickTasksToStart(afterOne, { maxWorkers: 2, freeSlots: 10 }))).toEqual(["2", "3"]);
    expect(ids(pickTasksToStart(afterOne, { maxWorkers: 2, freeSlots: 1 }))).toEqual(["2"]);
    expect(ids(pickTasksToStart(afterOne, { maxWorkers: 0, freeSlots: 10 }))).toEqual(["2", "3", "5"]);
    expect(ids(pickTasksToStart(afterOne, { maxWorkers: 5, freeSlots: 0 }))).toEqual([]);
    const busy = withStatus(afterOne, { "2": "in_progress", "5": "in_progress" });
    expect(ids(pickTasksToStart(busy, { maxWorkers: 2, freeSlots: 10 }))).toEqual([]);
    expect(ids(pickTasksToStart(busy, { maxWorkers: 3, freeSlots: 10 }))).toEqual(["3"]);
  });

  it("simulated to the end, never more than max_workers run and every dependent starts after its blockers resolved", () => {
    let tasks = graph;
    let peak = 0;
    const resolvedOrder: string[] = [];
    for (let step = 0; step < 50 && executionState(tasks).kind === "working"; step++) {
      const picked = ids(pickTasksToStart(tasks, { maxWorkers: 2, freeSlots: 8 }));
      tasks = withStatus(tasks, Object.fromEntries(picked.map((id) => [id, "in_progress" as const])));
      const running = tasks.filter((t) => t.status === "in_progress");
      peak = Math.max(peak, running.length);
      for (const t of running) {
        for (const blocker of t.blockedBy) expect(resolvedOrder).toContain(blocker);
      }
      const finished = running[0] as Task;
      resolvedOrder.push(finished.id);
      tasks = withStatus(tasks, { [finished.id]: "resolved" });
    }
    expect(executionState(tasks)).toEqual({ kind: "done" });
    expect(peak).toBe(2);
    expect([...resolvedOrder].sort(compareTaskIds)).toEqual(["1", "2", "3", "4", "5", "6"]);
  });

  it("a failed task strands everything that waits on it, directly or not", () => {
    const tasks = withStatus(graph, { "1": "resolved", "2": "failed", "3": "resolved", "5": "resolved" });
    expect(unreachableTasks(tasks)).toEqual([
      { id: "4", failedBlockers: ["2"] },
      { id: "6", failedBlockers: ["2"] },
      { id: "verify", failedBlockers: ["2"] },
    ]);
    expect(readyTasks(tasks)).toEqual([]);
    expect(executionState(tasks)).toEqual({
      kind: "stuck",
      failed: ["2"],
      unreachable: [
        { id: "4", failedBlockers: ["2"] },
        { id: "6", failedBlockers: ["2"] },
      ],
    });
    // While another worker still runs, the session is not stuck yet.
    expect(executionState(withStatus(tasks, { "5": "in_progress" })).kind).toBe("working");
    expect(stuckReason(tasks)).toBe("tasks failed: 2; 4 waits on failed 2; 6 waits on failed 2");
  });

  it("a cycle a hand edit made is named as what stops the session, not an empty list of failed tasks", () => {
    const tasks = withVerifyTask([task("a", ["b"]), task("b", ["a"]), task("c")], DEFAULT_SESSION_OPTIONS).map((t) => (t.id === "c" ? { ...t, status: "resolved" as const } : t));
    expect(executionState(tasks)).toEqual({ kind: "stuck", failed: [], unreachable: [] });
    expect(stuckReason(tasks)).toBe("the task graph cannot run: cycle: a → b → a (break it by removing one blockedBy)");
    // A blockedBy naming no task strands its task the same way.
    expect(stuckReason([task("a", ["zz"])])).toBe('the task graph cannot run: task a: blockedBy names "zz", which is not a task');
  });
});

describe("verification verdicts", () => {
  const session = { iteration: 1, options: { ...DEFAULT_SESSION_OPTIONS, max_iterations: 2 } };
  const done = withStatus(withVerifyTask([task("1"), task("2", ["1"])], DEFAULT_SESSION_OPTIONS), {
    "1": "resolved",
    "2": "resolved",
    verify: "in_progress",
  });

  it("pass → complete, verify resolved", () => {
    const outcome = applyVerdict(session, done, { passed: true, failures: [] });
    expect(outcome.kind).toBe("complete");
    expect(outcome.tasks.find((t) => t.id === "verify")?.status).toBe("resolved");
  });

  it("fail → iteration + 1 with a fix task per failure, verify waiting for them", () => {
    const outcome = applyVerdict(session, done, {
      passed: false,
      failures: [
        { task: "2", reason: "GET /settings returns 500" },
        { task: "verify", reason: "the build fails" },
      ],
    });
    if (outcome.kind !== "retry") throw new Error(`expected retry, got ${outcome.kind}`);
    expect(outcome.iteration).toBe(2);
    expect(outcome.changed).toEqual(["fix-2-1", "fix-2-2"]);
    const fix = outcome.tasks.find((t) => t.id === "fix-2-1");
    expect(fix).toMatchObject({ subject: "Fix: Task 2", status: "open", blockedBy: [], criteria: ["2 works"] });
    expect(fix?.description).toContain("GET /settings returns 500");
    expect(outcome.tasks.find((t) => t.id === "fix-2-2")?.criteria).toEqual(["Verification no longer reports: the build fails"]);
    expect(outcome.tasks.find((t) => t.id === "verify")).toMatchObject({
      status: "open",
      blockedBy: ["1", "2", "fix-2-1", "fix-2-2"],
    });
    expect(ids(readyTasks(outcome.tasks))).toEqual(["fix-2-1", "fix-2-2"]);
    expect(taskGraphErrors(outcome.tasks)).toEqual([]);
  });

  it("with the reopen policy, a failure reopens its task with the reason", () => {
    const outcome = applyVerdict(session, done, { passed: false, failures: [{ task: "1", reason: "no index" }] }, {
      failurePolicy: "reopen",
    });
    if (outcome.kind !== "retry") throw new Error("expected retry");
    expect(outcome.changed).toEqual(["1"]);
    const reopened = outcome.tasks.find((t) => t.id === "1");
    expect(reopened?.status).toBe("open");
    expect(reopened?.description).toContain("Verification (iteration 1) failed: no index");
    expect(ids(readyTasks(outcome.tasks))).toEqual(["1"]);
    expect(done.find((t) => t.id === "1")?.status).toBe("resolved"); // the input is not mutated
  });

  it("fail at max_iterations → failed with the reasons", () => {
    const outcome = applyVerdict({ ...session, iteration: 2 }, done, {
      passed: false,
      failures: [{ task: "2", reason: "still 500" }],
    });
    expect(outcome).toMatchObject({ kind: "failed", reasons: ["2: still 500"] });
    expect(outcome.tasks.find((t) => t.id === "verify")?.status).toBe("failed");
  });

  it("a verdict naming no task of the plan is refused, to be typed back to the verifier", () => {
    try {
      applyVerdict(session, done, { passed: false, failures: [{ task: "42", reason: "x" }] });
      throw new Error("expected a PuError");
    } catch (error) {
      expect(isPuError(error) && error.code).toBe("INVALID_ARGUMENT");
      expect((error as Error).message).toContain('failures[0].task: "42" is not a task of this plan');
    }
  });
});

describe("exploration stages", () => {
  const base = { started: true, written: [] as string[], overviewDone: false, hints: [] };

  it("not_started → overview → analyzing → targeted → complete", () => {
    expect(explorationProgress({ ...base, started: false }).stage).toBe("not_started");
    expect(explorationProgress(base)).toEqual({ stage: "overview", expected: ["overview"], missing: ["overview"], complete: false });
    expect(explorationProgress({ ...base, written: ["overview"] }).stage).toBe("analyzing");
    const hints = [
      { id: "exp-1", hint: "auth" },
      { id: "exp-2", hint: "db" },
    ];
    expect(explorationProgress({ ...base, written: ["overview", "exp-2"], overviewDone: true, hints })).toEqual({
      stage: "targeted",
      expected: ["overview", "exp-1", "exp-2"],
      missing: ["exp-1"],
      complete: false,
    });
    expect(explorationProgress({ ...base, written: ["overview", "exp-1", "exp-2"], overviewDone: true, hints })).toEqual({
      stage: "complete",
      expected: ["overview", "exp-1", "exp-2"],
      missing: [],
      complete: true,
    });
  });

  it("without hints, exploration ends with the overview; stray files do not count", () => {
    expect(explorationProgress({ ...base, written: ["overview", "exp-9"], overviewDone: true })).toEqual({
      stage: "complete",
      expected: ["overview"],
      missing: [],
      complete: true,
    });
  });

  it("the overview explorer ending without its file leaves the stage at overview", () => {
    expect(explorationProgress({ ...base, overviewDone: true }).stage).toBe("overview");
  });
});

describe("graphs of many tasks", () => {
  // A small deterministic generator, so a failure reproduces.
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
  }

  function randomDag(size: number, next: () => number): Task[] {
    return Array.from({ length: size }, (_, i) => {
      const blockers = Array.from({ length: i }, (_, j) => String(j + 1)).filter(() => next() < 0.1);
      return task(String(i + 1), blockers);
    });
  }

  it("an acyclic graph has no errors; one back edge yields a cycle through it", () => {
    for (let seed = 1; seed <= 30; seed++) {
      const next = random(seed);
      const tasks = randomDag(30, next);
      expect(taskGraphErrors(tasks)).toEqual([]);
      // Make some task with blockers also block one of its own (transitive) blockers' blockers: a cycle.
      const withBlocker = tasks.filter((t) => t.blockedBy.length > 0);
      if (withBlocker.length === 0) continue;
      const victim = withBlocker[Math.floor(next() * withBlocker.length)] as Task;
      const blocker = tasks.find((t) => t.id === victim.blockedBy[0]) as Task;
      const cyclic = tasks.map((t) => (t.id === blocker.id ? { ...t, blockedBy: [...t.blockedBy, victim.id] } : t));
      const cycles = taskGraphErrors(cyclic).filter((e) => e.startsWith("cycle: "));
      expect(cycles.length, `seed ${seed}`).toBeGreaterThan(0);
      expect(cycles.some((c) => c.includes(victim.id) && c.includes(blocker.id)), `seed ${seed}`).toBe(true);
    }
  });

  it("a 50-task graph runs to the end under 4 workers, every dependent after its blockers", () => {
    let tasks = withVerifyTask(randomDag(50, random(7)), DEFAULT_SESSION_OPTIONS);
    const resolved = new Set<string>();
    const next = random(99);
    let peak = 0;
    for (let step = 0; step < 500 && executionState(tasks).kind === "working"; step++) {
      const picked = ids(pickTasksToStart(tasks, { maxWorkers: 4, freeSlots: 6 }));
      for (const id of picked) {
        const started = tasks.find((t) => t.id === id) as Task;
        expect(started.blockedBy.every((b) => resolved.has(b))).toBe(true);
      }
      tasks = withStatus(tasks, Object.fromEntries(picked.map((id) => [id, "in_progress" as const])));
      const running = tasks.filter((t) => t.status === "in_progress");
      peak = Math.max(peak, running.length);
      const finished = running[Math.floor(next() * running.length)] as Task; // workers finish in any order
      resolved.add(finished.id);
      tasks = withStatus(tasks, { [finished.id]: "resolved" });
    }
    expect(executionState(tasks)).toEqual({ kind: "done" });
    expect(resolved.size).toBe(50);
    expect(peak).toBeLessThanOrEqual(4);
    expect(peak).toBeGreaterThan(1);
  });
});
