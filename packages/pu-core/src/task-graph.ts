// The rules of a plan session as pure functions over its tasks, so the daemon only
// reads files, calls these, and writes what they return. Every list these return
// is in task-id order (numbers numerically: 2 before 10), so two daemons given the
// same files make the same decisions.
import { PuError } from "./errors.js";
import { OVERVIEW_EXPLORER_ID, taskIdFromFileName, VERIFY_TASK_ID } from "./plan-layout.js";
import {
  parseTaskProposal,
  type ExplorationStage,
  type ExplorerHint,
  type Session,
  type SessionOptions,
  type Task,
  type VerifierVerdict,
} from "./plan-files.js";

/** Numeric ids in numeric order, before any other id; the rest by code point. */
export function compareTaskIds(a: string, b: string): number {
  const numA = /^\d+$/.test(a);
  const numB = /^\d+$/.test(b);
  if (numA && numB) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  if (numA !== numB) return numA ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortedById<T extends { id: string }>(tasks: readonly T[]): T[] {
  return [...tasks].sort((x, y) => compareTaskIds(x.id, y.id));
}

// ---- planning: validating the planner's proposals -----------------------------

export interface ProposalFile {
  /** The file's name in `proposed/`, e.g. `3.json`. */
  name: string;
  text: string;
}

export interface ProposalValidation {
  /** The proposals that parsed, in id order (only usable when `errors` is empty). */
  tasks: Task[];
  /** Every problem found, each one line naming the file or task; empty when the plan is usable. */
  errors: string[];
}

/**
 * Checks a whole set of proposals at once and reports ALL problems, so one round
 * trip to the planner can fix them all: each file parses and validates (schema,
 * non-empty `criteria`, no claimed evidence), its id matches its file name and is
 * not the reserved `verify`; then the graph (see `taskGraphErrors`).
 */
export function validateTaskProposals(files: readonly ProposalFile[]): ProposalValidation {
  const errors: string[] = [];
  const tasks: Task[] = [];
  // Ids of files that exist but did not validate: a blockedBy naming them is not also "not a task".
  const unusable: string[] = [];
  const ordered = [...files].sort((x, y) => compareTaskIds(stripJson(x.name), stripJson(y.name)));
  for (const file of ordered) {
    const where = `proposed/${file.name}`;
    const fileId = taskIdFromFileName(file.name);
    if (fileId === undefined) {
      errors.push(`${where}: the file name must be <task id>.json (letters, digits, '_' and '-')`);
      continue;
    }
    let task: Task;
    try {
      task = parseTaskProposal(file.text, where);
    } catch (error) {
      errors.push((error as Error).message);
      unusable.push(fileId);
      continue;
    }
    if (task.id !== fileId) {
      errors.push(`${where}: id: "${task.id}" does not match the file name (rename the file to ${task.id}.json or fix the id)`);
      continue;
    }
    if (task.id === VERIFY_TASK_ID) {
      errors.push(`${where}: id: "${VERIFY_TASK_ID}" is reserved (pu adds the verify task itself); pick another id`);
      continue;
    }
    tasks.push(task);
  }
  if (files.length === 0) errors.push("proposed/: no task proposals (write one JSON file per task, proposed/<id>.json)");
  errors.push(...taskGraphErrors(tasks, unusable));
  return { tasks: sortedById(tasks), errors };
}

function stripJson(name: string): string {
  return name.endsWith(".json") ? name.slice(0, -".json".length) : name;
}

/**
 * Graph problems: duplicate ids, a `blockedBy` naming no task, a task blocked by
 * itself, and dependency cycles, each cycle reported once with its path
 * (`cycle: 1 → 3 → 2 → 1`).
 */
export function taskGraphErrors(
  tasks: readonly Pick<Task, "id" | "blockedBy">[],
  /** Ids that exist but are reported elsewhere (a proposal that did not parse). */
  alsoKnown: readonly string[] = [],
): string[] {
  const errors: string[] = [];
  const byId = new Map<string, Pick<Task, "id" | "blockedBy">>();
  for (const task of sortedById(tasks)) {
    if (byId.has(task.id)) errors.push(`task ${task.id}: the id is used by more than one task`);
    else byId.set(task.id, task);
  }
  for (const task of byId.values()) {
    const seen = new Set<string>();
    for (const blocker of task.blockedBy) {
      if (seen.has(blocker)) errors.push(`task ${task.id}: blockedBy lists "${blocker}" twice`);
      seen.add(blocker);
      if (blocker === task.id) errors.push(`task ${task.id}: blockedBy names the task itself`);
      else if (!byId.has(blocker) && !alsoKnown.includes(blocker)) errors.push(`task ${task.id}: blockedBy names "${blocker}", which is not a task`);
    }
  }
  for (const cycle of findCycles(byId)) errors.push(`cycle: ${cycle.join(" → ")} (break it by removing one blockedBy)`);
  return errors;
}

/** Cycles along `blockedBy` edges (self-edges and dangling ones left to the caller), each rotated to start at its smallest id. */
function findCycles(byId: ReadonlyMap<string, Pick<Task, "id" | "blockedBy">>): string[][] {
  const state = new Map<string, "active" | "done">();
  const found = new Map<string, string[]>();
  const stack: string[] = [];
  const visit = (id: string): void => {
    state.set(id, "active");
    stack.push(id);
    const blockers = [...new Set(byId.get(id)?.blockedBy ?? [])].sort(compareTaskIds);
    for (const next of blockers) {
      if (next === id || !byId.has(next)) continue;
      const nextState = state.get(next);
      if (nextState === "active") {
        const cycle = stack.slice(stack.indexOf(next));
        const start = cycle.indexOf([...cycle].sort(compareTaskIds)[0] as string);
        const rotated = [...cycle.slice(start), ...cycle.slice(0, start)];
        const path = [...rotated, rotated[0] as string];
        found.set(path.join("\0"), path);
      } else if (nextState === undefined) {
        visit(next);
      }
    }
    stack.pop();
    state.set(id, "done");
  };
  for (const id of byId.keys()) if (!state.has(id)) visit(id);
  return [...found.values()];
}

/** The errors as one message to type back to the planner. */
export function formatProposalErrors(errors: readonly string[]): string {
  const count = errors.length === 1 ? "1 problem" : `${errors.length} problems`;
  return [
    `pu did not accept the task proposals (${count}):`,
    ...errors.map((error) => `- ${error}`),
    "Fix the files in proposed/ (one JSON file per task) and end your turn; pu checks them again.",
  ].join("\n");
}

/** The task pu adds after planning: blocked by every other task, run by the verifier. */
export function verifyTask(otherTaskIds: readonly string[]): Task {
  return {
    id: VERIFY_TASK_ID,
    subject: "Verify every task's criteria",
    description: "Check each task's criteria against the evidence pu recorded, and run the plan's verify commands.",
    status: "open",
    blockedBy: [...otherTaskIds].sort(compareTaskIds),
    complexity: "standard",
    criteria: ["Every task's criteria are met, as its evidence shows"],
    evidence: [],
  };
}

/** The accepted tasks plus `verify` (blocked by all of them) unless `skip_verify`. */
export function withVerifyTask(tasks: readonly Task[], options: Pick<SessionOptions, "skip_verify">): Task[] {
  const others = sortedById(tasks.filter((task) => task.id !== VERIFY_TASK_ID));
  if (options.skip_verify) return others;
  return [...others, verifyTask(others.map((task) => task.id))];
}

// ---- execution ----------------------------------------------------------------

/**
 * Open tasks whose every blocker is resolved, in id order. The verify task is not
 * among them: it is not a worker's job (see `executionState`).
 */
export function readyTasks(tasks: readonly Task[]): Task[] {
  const status = new Map(tasks.map((task) => [task.id, task.status]));
  return sortedById(
    tasks.filter(
      (task) =>
        task.id !== VERIFY_TASK_ID &&
        task.status === "open" &&
        task.blockedBy.every((blocker) => status.get(blocker) === "resolved"),
    ),
  );
}

export interface UnreachableTask {
  id: string;
  /** The failed tasks it waits on, directly or through other tasks. */
  failedBlockers: string[];
}

/** Open tasks that can never start, because a task they wait on (directly or not) failed. */
export function unreachableTasks(tasks: readonly Task[]): UnreachableTask[] {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const memo = new Map<string, Set<string>>();
  const failedUpstream = (id: string, path: Set<string>): Set<string> => {
    const cached = memo.get(id);
    if (cached) return cached;
    const result = new Set<string>();
    if (path.has(id)) return result; // a cycle; validation rejects those, but never loop
    path.add(id);
    for (const blocker of byId.get(id)?.blockedBy ?? []) {
      const task = byId.get(blocker);
      if (!task) continue;
      if (task.status === "failed") result.add(blocker);
      else if (task.status !== "resolved") for (const f of failedUpstream(blocker, path)) result.add(f);
    }
    path.delete(id);
    memo.set(id, result);
    return result;
  };
  return sortedById(tasks.filter((task) => task.status === "open"))
    .map((task) => ({ id: task.id, failedBlockers: [...failedUpstream(task.id, new Set())].sort(compareTaskIds) }))
    .filter((entry) => entry.failedBlockers.length > 0);
}

export interface WorkerLimits {
  /** The session's `max_workers`; 0 means no plan-level limit. */
  maxWorkers: number;
  /** Launch slots the work queue has free right now (its caps and `paused` applied). */
  freeSlots: number;
}

/**
 * The ready tasks to start now, in id order: no more than `maxWorkers` tasks in
 * progress at once (counting those already in progress) and no more than the
 * queue's free slots.
 */
export function pickTasksToStart(tasks: readonly Task[], limits: WorkerLimits): Task[] {
  const running = tasks.filter((task) => task.status === "in_progress" && task.id !== VERIFY_TASK_ID).length;
  const underPlanCap = limits.maxWorkers === 0 ? Number.POSITIVE_INFINITY : limits.maxWorkers - running;
  const count = Math.max(0, Math.min(underPlanCap, limits.freeSlots));
  return readyTasks(tasks).slice(0, count);
}

export type ExecutionState =
  /** Workers are busy or can be started. */
  | { kind: "working"; inProgress: string[]; ready: string[] }
  /** Every task but verify is resolved: time for VERIFICATION (or COMPLETE with skip_verify). */
  | { kind: "done" }
  /** Nothing runs and nothing can start: some task failed and the rest wait on it. */
  | { kind: "stuck"; failed: string[]; unreachable: UnreachableTask[] };

export function executionState(tasks: readonly Task[]): ExecutionState {
  const work = sortedById(tasks.filter((task) => task.id !== VERIFY_TASK_ID));
  if (work.every((task) => task.status === "resolved")) return { kind: "done" };
  const inProgress = work.filter((task) => task.status === "in_progress").map((task) => task.id);
  const ready = readyTasks(tasks).map((task) => task.id);
  if (inProgress.length > 0 || ready.length > 0) return { kind: "working", inProgress, ready };
  return {
    kind: "stuck",
    failed: work.filter((task) => task.status === "failed").map((task) => task.id),
    unreachable: unreachableTasks(tasks).filter((entry) => entry.id !== VERIFY_TASK_ID),
  };
}

/**
 * Why execution cannot go on, in one line: the failed tasks and what waits on them, and any
 * graph problem (a cycle or a dangling `blockedBy`, from a hand edit of tasks/) that keeps
 * tasks from ever becoming ready.
 */
export function stuckReason(tasks: readonly Task[]): string {
  const state = executionState(tasks);
  const parts: string[] = [];
  if (state.kind === "stuck" && state.failed.length > 0) {
    const why = state.unreachable.map((u) => `${u.id} waits on failed ${u.failedBlockers.join(", ")}`);
    parts.push(`tasks failed: ${state.failed.join(", ")}${why.length ? `; ${why.join("; ")}` : ""}`);
  }
  const graph = taskGraphErrors(tasks);
  if (graph.length > 0) parts.push(`the task graph cannot run: ${graph.join("; ")}`);
  if (parts.length === 0) {
    const waiting = sortedById(tasks.filter((task) => task.status === "open" && task.id !== VERIFY_TASK_ID)).map((task) => task.id);
    parts.push(`no task can start${waiting.length ? ` (${waiting.join(", ")} wait on tasks that are not resolved)` : ""}`);
  }
  return parts.join("; ");
}

// ---- verification -------------------------------------------------------------

/** Problems with a verdict that only the task list can reveal: a failure naming no task. */
export function verdictErrors(tasks: readonly Task[], verdict: VerifierVerdict): string[] {
  const ids = new Set(tasks.map((task) => task.id));
  return verdict.failures
    .map((failure, index) =>
      ids.has(failure.task) || failure.task === VERIFY_TASK_ID
        ? undefined
        : `failures[${index}].task: "${failure.task}" is not a task of this plan (use "${VERIFY_TASK_ID}" for a failure of the whole)`,
    )
    .filter((error): error is string => error !== undefined);
}

export type VerdictOutcome =
  | { kind: "complete"; tasks: Task[] }
  | { kind: "failed"; reasons: string[]; tasks: Task[] }
  /** Run EXECUTION again at `iteration` with `tasks` (new fix tasks, reopened ones, verify reset). */
  | { kind: "retry"; iteration: number; tasks: Task[]; changed: string[] };

export interface ApplyVerdictOptions {
  /**
   * `fix` (default): every failure becomes a new task `fix-<iteration>-<n>` carrying the
   * failed task's criteria. `reopen`: a failure naming a task reopens that task
   * instead (its description gains the reason); failures of the whole still become fix tasks.
   */
  failurePolicy?: "fix" | "reopen";
}

/**
 * What a verdict does to the session. Pass → COMPLETE (verify resolved). Fail at
 * `max_iterations` → FAILED with the reasons (verify failed). Otherwise the next
 * iteration: failures become fix tasks or reopened tasks, and verify waits for them.
 * Throws INVALID_ARGUMENT for a verdict naming a task that does not exist.
 */
export function applyVerdict(
  session: Pick<Session, "iteration" | "options">,
  tasks: readonly Task[],
  verdict: VerifierVerdict,
  options: ApplyVerdictOptions = {},
): VerdictOutcome {
  const problems = verdictErrors(tasks, verdict);
  if (problems.length > 0) throw new PuError("INVALID_ARGUMENT", `verifier verdict: ${problems.join("; ")}`);
  const setVerify = (status: Task["status"]): Task[] =>
    sortedById(tasks.map((task) => (task.id === VERIFY_TASK_ID ? { ...task, status } : task)));
  if (verdict.passed) return { kind: "complete", tasks: setVerify("resolved") };

  const reasons = verdict.failures.map((failure) => `${failure.task}: ${failure.reason}`);
  if (session.iteration >= session.options.max_iterations) {
    return { kind: "failed", reasons, tasks: setVerify("failed") };
  }

  const iteration = session.iteration + 1;
  const byId = new Map(tasks.map((task) => [task.id, { ...task }]));
  const changed: string[] = [];
  let fixNumber = 0;
  const nextFixId = (): string => {
    let id: string;
    do id = `fix-${iteration}-${++fixNumber}`;
    while (byId.has(id));
    return id;
  };
  for (const failure of verdict.failures) {
    const failed = failure.task === VERIFY_TASK_ID ? undefined : byId.get(failure.task);
    if (failed && options.failurePolicy === "reopen") {
      failed.status = "open";
      failed.description = `${failed.description}\n\nVerification (iteration ${session.iteration}) failed: ${failure.reason}`.trim();
      if (!changed.includes(failed.id)) changed.push(failed.id);
      continue;
    }
    const id = nextFixId();
    byId.set(id, {
      id,
      subject: failed ? `Fix: ${failed.subject}` : "Fix a verification failure",
      description: failed
        ? `Verification found that task ${failed.id} is not done: ${failure.reason}\n\nThe task was: ${failed.description}`.trim()
        : `Verification failed: ${failure.reason}`,
      status: "open",
      blockedBy: [],
      complexity: failed?.complexity ?? "standard",
      criteria: failed ? [...failed.criteria] : [`Verification no longer reports: ${failure.reason}`],
      evidence: [],
    });
    changed.push(id);
  }
  const verify = byId.get(VERIFY_TASK_ID);
  if (verify) {
    verify.status = "open";
    verify.blockedBy = [...byId.keys()].filter((id) => id !== VERIFY_TASK_ID).sort(compareTaskIds);
  }
  return { kind: "retry", iteration, tasks: sortedById([...byId.values()]), changed };
}

// ---- exploration --------------------------------------------------------------

export interface ExplorationFacts {
  /** The daemon has started the overview explorer. */
  started: boolean;
  /** Explorer ids whose `exploration/<id>.md` exists and is not empty. */
  written: readonly string[];
  /** The overview explorer's turn has ended, so `hints.json` is final. */
  overviewDone: boolean;
  /** `exploration/hints.json`, validated; empty when the file is absent. */
  hints: readonly ExplorerHint[];
}

export interface ExplorationProgress {
  stage: ExplorationStage;
  /** context.json's `expected_explorers`: the overview, then one per hint. */
  expected: string[];
  /** Expected explorers whose file is not written yet (those to start or wait for). */
  missing: string[];
  /** context.json's `exploration_complete`. */
  complete: boolean;
}

/**
 * The exploration stage from what is on disk: `not_started` → `overview` (its file
 * not yet written) → `analyzing` (written, the overview explorer still deciding on
 * hints) → `targeted` (some `exp-N` file missing) → `complete` (every expected file
 * written; right after the overview when it asked for none).
 */
export function explorationProgress(facts: ExplorationFacts): ExplorationProgress {
  const written = new Set(facts.written);
  const overviewOnly = [OVERVIEW_EXPLORER_ID];
  if (!facts.started) return { stage: "not_started", expected: overviewOnly, missing: overviewOnly, complete: false };
  if (!written.has(OVERVIEW_EXPLORER_ID)) return { stage: "overview", expected: overviewOnly, missing: overviewOnly, complete: false };
  if (!facts.overviewDone) return { stage: "analyzing", expected: overviewOnly, missing: [], complete: false };
  const expected = [OVERVIEW_EXPLORER_ID, ...facts.hints.map((hint) => hint.id)];
  const missing = expected.filter((id) => !written.has(id));
  return missing.length === 0
    ? { stage: "complete", expected, missing, complete: true }
    : { stage: "targeted", expected, missing, complete: false };
}
