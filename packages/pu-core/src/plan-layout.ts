// Where a plan session lives: `.pu/plans/<session-id>/`, laid out exactly as the
// ultrawork seed lays out its sessions (spec/ultrawork-state-schema.txt), plus
// what pu adds for its role agents: `proposed/` (the planner's drafts, validated
// before they count), `exploration/hints.json` (the overview explorer's requests
// for targeted ones), `reports/` (workers' notes) and `verification/` (verdicts).
// Every id that becomes a path segment is checked here, so nothing a planner or
// a user typed can point outside the session directory.
import { randomInt } from "node:crypto";
import { join } from "node:path";
import { PuError } from "./errors.js";
import { puDir } from "./paths.js";

// Session ids become a directory name and part of the branch `pu/plan-<id>`:
// lowercase letters, digits and inner `-`, so they are safe in both.
const PLAN_SESSION_ID = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
const PLAN_SESSION_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

// Task ids become `tasks/<id>.json`: no dots (so no `..`, no hidden files), no separators.
const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const EXPLORER_ID = /^(?:overview|exp-[1-9][0-9]{0,3})$/;

/** The task pu adds after planning, blocked by every other task. Planners may not propose it. */
export const VERIFY_TASK_ID = "verify";
export const OVERVIEW_EXPLORER_ID = "overview";

/** A new session id: `yyyymmdd-` plus 6 random characters, so `ls .pu/plans` sorts by day. */
export function newPlanSessionId(now: Date = new Date()): string {
  const day = now.toISOString().slice(0, 10).replaceAll("-", "");
  let suffix = "";
  for (let i = 0; i < 6; i++) suffix += PLAN_SESSION_ID_ALPHABET[randomInt(PLAN_SESSION_ID_ALPHABET.length)];
  return `${day}-${suffix}`;
}

export function isPlanSessionId(s: string): boolean {
  return PLAN_SESSION_ID.test(s);
}

/** Returns `id` if it is a usable session id; throws INVALID_ARGUMENT otherwise. */
export function validatePlanSessionId(id: string): string {
  if (!isPlanSessionId(id)) {
    throw new PuError(
      "INVALID_ARGUMENT",
      `plan session id ${JSON.stringify(id)} is not valid (lowercase letters, digits and inner '-', at most 64; see \`pu plan list\`)`,
    );
  }
  return id;
}

export function isTaskId(s: string): boolean {
  return TASK_ID.test(s);
}

/** Returns `id` if it is safe as a task file name; throws INVALID_ARGUMENT otherwise. */
export function validateTaskId(id: string): string {
  if (!isTaskId(id)) {
    throw new PuError(
      "INVALID_ARGUMENT",
      `task id ${JSON.stringify(id)} is not valid (letters, digits, '_' and '-', starting with a letter or digit, at most 64)`,
    );
  }
  return id;
}

/** `overview` or `exp-N` (N from 1). */
export function isExplorerId(s: string): boolean {
  return EXPLORER_ID.test(s);
}

export function validateExplorerId(id: string): string {
  if (!isExplorerId(id)) {
    throw new PuError("INVALID_ARGUMENT", `explorer id ${JSON.stringify(id)} is not valid (expected "overview" or "exp-N")`);
  }
  return id;
}

/** The explorer id a file name in `exploration/` belongs to (`exp-2.md` → `exp-2`), if any. */
export function explorerIdFromFileName(fileName: string): string | undefined {
  if (!fileName.endsWith(".md")) return undefined;
  const id = fileName.slice(0, -".md".length);
  return isExplorerId(id) ? id : undefined;
}

/** The task id a file name in `tasks/` or `proposed/` belongs to (`3.json` → `3`), if any. */
export function taskIdFromFileName(fileName: string): string | undefined {
  if (!fileName.endsWith(".json")) return undefined;
  const id = fileName.slice(0, -".json".length);
  return isTaskId(id) ? id : undefined;
}

/** The plan's integration branch, which every worker branches from and merges into. */
export function planBranch(sessionId: string): string {
  return `pu/plan-${validatePlanSessionId(sessionId)}`;
}

export function plansDir(root: string): string {
  return join(puDir(root), "plans");
}

/** Every path of one session, the ids validated once. */
export interface PlanLayout {
  sessionId: string;
  dir: string;
  session: string;
  context: string;
  design: string;
  explorationDir: string;
  overview: string;
  hints: string;
  proposedDir: string;
  tasksDir: string;
  verifyTask: string;
  /** `reports/`: workers' optional notes on what they did (`$PU_OUTPUT_FILE` of a worker). */
  reportsDir: string;
  /** `verification/`: the verifier's verdicts, one per iteration. */
  verificationDir: string;
  /** `exploration/<id>.md` for `overview` or `exp-N`. */
  exploration(explorerId: string): string;
  /** `proposed/<id>.json`. */
  proposedTask(taskId: string): string;
  /** `tasks/<id>.json` (`tasks/verify.json` for the verify task). */
  task(taskId: string): string;
  /** `reports/<task id>.md`. */
  report(taskId: string): string;
  /** `verification/iteration-<N>.json`. */
  verdict(iteration: number): string;
}

export function planLayout(root: string, sessionId: string): PlanLayout {
  const dir = join(plansDir(root), validatePlanSessionId(sessionId));
  const explorationDir = join(dir, "exploration");
  const proposedDir = join(dir, "proposed");
  const tasksDir = join(dir, "tasks");
  const reportsDir = join(dir, "reports");
  const verificationDir = join(dir, "verification");
  return {
    sessionId,
    dir,
    session: join(dir, "session.json"),
    context: join(dir, "context.json"),
    design: join(dir, "design.md"),
    explorationDir,
    overview: join(explorationDir, `${OVERVIEW_EXPLORER_ID}.md`),
    hints: join(explorationDir, "hints.json"),
    proposedDir,
    tasksDir,
    verifyTask: join(tasksDir, `${VERIFY_TASK_ID}.json`),
    reportsDir,
    verificationDir,
    exploration: (explorerId) => join(explorationDir, `${validateExplorerId(explorerId)}.md`),
    proposedTask: (taskId) => join(proposedDir, `${validateTaskId(taskId)}.json`),
    task: (taskId) => join(tasksDir, `${validateTaskId(taskId)}.json`),
    report: (taskId) => join(reportsDir, `${validateTaskId(taskId)}.md`),
    verdict: (iteration) => {
      if (!Number.isSafeInteger(iteration) || iteration < 1) {
        throw new PuError("INVALID_ARGUMENT", `iteration ${iteration} is not a positive whole number`);
      }
      return join(verificationDir, `iteration-${iteration}.json`);
    },
  };
}

/** `exploration/<id>.md` relative to the session directory, as `context.json`'s `explorers[].file` records it. */
export function explorationRelativePath(explorerId: string): string {
  return `exploration/${validateExplorerId(explorerId)}.md`;
}
