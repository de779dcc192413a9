// The files of a plan session (spec/ultrawork-state-schema.txt), field for field and
// spelled as the seed spells them (snake_case, except the seed's own `blockedBy`).
// Objects are loose: keys written by a newer pu survive a read-modify-write cycle.
//
// Two kinds of file, two error codes:
// - the daemon's state (session.json, context.json, tasks/*.json): a file that does
//   not parse is INVALID_STATE and is reported, never overwritten;
// - what role agents write (proposed/*.json, hints.json, the verifier's verdict):
//   INVALID_ARGUMENT, with every problem listed so it can be typed back to the agent.
import { z } from "zod";
import { PuError } from "./errors.js";
import { parseJsonText, parseJsonValue } from "./json-state.js";
import { isExplorerId, isPlanSessionId, isTaskId, OVERVIEW_EXPLORER_ID } from "./plan-layout.js";

export const SESSION_VERSION = "5.0";
export const CONTEXT_VERSION = "2.1";

export const PHASES = ["EXPLORATION", "PLANNING", "EXECUTION", "VERIFICATION", "COMPLETE", "FAILED", "CANCELLED"] as const;
export const PhaseSchema = z.enum(PHASES);
export type Phase = z.infer<typeof PhaseSchema>;

/** Phases a session never leaves. */
export const FINAL_PHASES: readonly Phase[] = ["COMPLETE", "FAILED", "CANCELLED"];

export const EXPLORATION_STAGES = ["not_started", "overview", "analyzing", "targeted", "complete"] as const;
export const ExplorationStageSchema = z.enum(EXPLORATION_STAGES);
export type ExplorationStage = z.infer<typeof ExplorationStageSchema>;

export const TASK_STATUSES = ["open", "in_progress", "resolved", "failed"] as const;
export const TaskStatusSchema = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

export const COMPLEXITIES = ["trivial", "standard", "complex"] as const;
export const ComplexitySchema = z.enum(COMPLEXITIES);
export type Complexity = z.infer<typeof ComplexitySchema>;

/** The seed's evidence types. `evidence_log` also records transitions (`agent_completed`, `task_failed`, …). */
export const EVIDENCE_TYPES = ["command_output", "test_result", "api_response", "file_content", "screenshot", "manual"] as const;
export type EvidenceType = (typeof EVIDENCE_TYPES)[number];

const IsoDateTime = z.iso.datetime({ offset: true });
const NonEmpty = z.string().min(1, "must not be empty");
const TaskIdSchema = z.string().refine(isTaskId, "must be letters, digits, '_' or '-' (starting with a letter or digit, at most 64)");
const ExplorerIdSchema = z.string().refine(isExplorerId, 'must be "overview" or "exp-N"');

// ---- session.json -------------------------------------------------------------

/**
 * One `evidence_log` entry. The seed's fields are `timestamp`, `type`, `agent_id`,
 * `task_id`, `status`, `summary`; pu adds what a check it ran produced: `command`,
 * `exit_code`, `duration_ms`, `output_tail`.
 */
export const EvidenceLogEntrySchema = z.looseObject({
  timestamp: IsoDateTime,
  type: NonEmpty,
  agent_id: z.string().nullish(),
  task_id: z.string().nullish(),
  status: z.string().nullish(),
  summary: z.string().nullish(),
  command: z.string().nullish(),
  exit_code: z.number().int().nullish(),
  duration_ms: z.number().nonnegative().nullish(),
  output_tail: z.string().nullish(),
});
export type EvidenceLogEntry = z.infer<typeof EvidenceLogEntrySchema>;

export const SessionOptionsSchema = z.looseObject({
  /** 0 = no plan-level limit (the work queue's caps still apply). */
  max_workers: z.number().int().min(0),
  max_iterations: z.number().int().min(1),
  skip_verify: z.boolean(),
  plan_only: z.boolean(),
  auto_mode: z.boolean(),
  /** The plan's budget over all its role agents (pu's, beside the seed's fields): spent, no further one starts. */
  max_cost: z.number().positive().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  /** pu's: where workers run (`local` and hosts' names, `pu plan start --on`); absent: this machine only. */
  on: z.array(z.string()).nullish(),
});
export type SessionOptions = z.infer<typeof SessionOptionsSchema>;

/** The seed's defaults. */
export const DEFAULT_SESSION_OPTIONS: SessionOptions = {
  max_workers: 0,
  max_iterations: 5,
  skip_verify: false,
  plan_only: false,
  auto_mode: false,
};

export const SessionSchema = z.looseObject({
  version: z.literal(SESSION_VERSION, {
    error: (issue) => `unsupported session version ${JSON.stringify(issue.input)} (this pu reads "${SESSION_VERSION}")`,
  }),
  session_id: z.string().refine(isPlanSessionId, "must be lowercase letters, digits and inner '-'"),
  goal: z.string(),
  started_at: IsoDateTime,
  updated_at: IsoDateTime,
  phase: PhaseSchema,
  exploration_stage: ExplorationStageSchema,
  iteration: z.number().int().min(1),
  plan: z.looseObject({ approved_at: IsoDateTime.nullable() }),
  options: SessionOptionsSchema,
  evidence_log: z.array(EvidenceLogEntrySchema),
  cancelled_at: IsoDateTime.nullable(),
});
export type Session = z.infer<typeof SessionSchema>;

export interface NewSessionInput {
  sessionId: string;
  goal: string;
  options?: Partial<SessionOptions>;
  now?: Date;
}

/** A session as `pu plan start` creates it: EXPLORATION, not started, iteration 1. */
export function newSession({ sessionId, goal, options = {}, now = new Date() }: NewSessionInput): Session {
  const stamp = now.toISOString();
  const session: Session = {
    version: SESSION_VERSION,
    session_id: sessionId,
    goal,
    started_at: stamp,
    updated_at: stamp,
    phase: "EXPLORATION",
    exploration_stage: "not_started",
    iteration: 1,
    plan: { approved_at: null },
    options: { ...DEFAULT_SESSION_OPTIONS, ...options },
    evidence_log: [],
    cancelled_at: null,
  };
  // Validate what callers passed (a negative max_workers, a bad id) before it is ever written.
  return parseJsonValue(SessionSchema, session, "new session", "INVALID_ARGUMENT");
}

export function parseSession(text: string, filePath: string): Session {
  return parseJsonText(SessionSchema, text, filePath, "INVALID_STATE");
}

export function serializeSession(session: Session): string {
  return toText(
    orderKeys(session, Object.keys(SessionSchema.shape), {
      plan: (plan) => orderKeys(plan as Plain, ["approved_at"]),
      options: (options) => orderKeys(options as Plain, Object.keys(SessionOptionsSchema.shape)),
      evidence_log: (log) =>
        (log as Plain[]).map((entry) => dropNullish(orderKeys(entry, Object.keys(EvidenceLogEntrySchema.shape)))),
    }),
  );
}

/** Which phase may follow which: the seed's transitions, plus VERIFICATION → EXECUTION for the next iteration and EXECUTION → COMPLETE with skip_verify. */
const NEXT_PHASES: Record<Phase, readonly Phase[]> = {
  EXPLORATION: ["PLANNING"],
  PLANNING: ["EXECUTION"],
  EXECUTION: ["VERIFICATION", "COMPLETE"],
  VERIFICATION: ["COMPLETE", "EXECUTION"],
  COMPLETE: [],
  FAILED: [],
  CANCELLED: [],
};

export function canEnterPhase(from: Phase, to: Phase): boolean {
  if (FINAL_PHASES.includes(from)) return false;
  return to === "FAILED" || to === "CANCELLED" || NEXT_PHASES[from].includes(to);
}

/** Throws INVALID_STATE unless `to` may follow `from` (a finished session never changes phase). */
export function checkPhaseTransition(sessionId: string, from: Phase, to: Phase): void {
  if (!canEnterPhase(from, to)) {
    const why = FINAL_PHASES.includes(from) ? "it is finished" : `${from} is followed by ${[...NEXT_PHASES[from], "FAILED", "CANCELLED"].join(", ")}`;
    throw new PuError("INVALID_STATE", `plan ${sessionId} is ${from} and cannot become ${to} (${why})`);
  }
}

/** How much of a check's output is kept as evidence: the end, where the verdict of most tools is. */
export const EVIDENCE_OUTPUT_TAIL_CHARS = 2000;

export interface CheckRun {
  taskId: string;
  agentId: string;
  command: string;
  exitCode: number;
  durationMs: number;
  /** The command's combined output (only its tail is kept). */
  output: string;
  /** `command_output` unless the caller knows it ran a test suite. */
  type?: "command_output" | "test_result";
  now?: Date;
}

/**
 * The evidence a check the daemon ran leaves: an `evidence_log` entry and the line
 * for the task's `evidence` list. A failed command is evidence too (`status: failed`).
 */
export function checkEvidence(run: CheckRun): { entry: EvidenceLogEntry; line: string } {
  const passed = run.exitCode === 0;
  const tail = run.output.length > EVIDENCE_OUTPUT_TAIL_CHARS ? run.output.slice(-EVIDENCE_OUTPUT_TAIL_CHARS) : run.output;
  const lastLine = tail.trimEnd().split("\n").at(-1)?.trim() ?? "";
  const seconds = (run.durationMs / 1000).toFixed(1);
  const summary = `${run.command}: exit ${run.exitCode} in ${seconds}s${lastLine ? ` (${lastLine})` : ""}`;
  const entry: EvidenceLogEntry = {
    timestamp: (run.now ?? new Date()).toISOString(),
    type: run.type ?? "command_output",
    agent_id: run.agentId,
    task_id: run.taskId,
    status: passed ? "passed" : "failed",
    summary,
    command: run.command,
    exit_code: run.exitCode,
    duration_ms: run.durationMs,
    output_tail: tail,
  };
  return { entry, line: `${passed ? "passed" : "FAILED"}: ${summary}` };
}

// ---- context.json -------------------------------------------------------------

export const ExplorerSummarySchema = z.looseObject({
  id: ExplorerIdSchema,
  hint: z.string(),
  /** Relative to the session directory: `exploration/<id>.md`. */
  file: z.string(),
  summary: z.string(),
});
export type ExplorerSummary = z.infer<typeof ExplorerSummarySchema>;

export const ContextSchema = z.looseObject({
  version: z.literal(CONTEXT_VERSION, {
    error: (issue) => `unsupported context version ${JSON.stringify(issue.input)} (this pu reads "${CONTEXT_VERSION}")`,
  }),
  expected_explorers: z.array(ExplorerIdSchema),
  exploration_complete: z.boolean(),
  explorers: z.array(ExplorerSummarySchema),
  key_files: z.array(z.string()),
  patterns: z.array(z.string()),
  constraints: z.array(z.string()),
});
export type Context = z.infer<typeof ContextSchema>;

export function newContext(): Context {
  return {
    version: CONTEXT_VERSION,
    expected_explorers: [OVERVIEW_EXPLORER_ID],
    exploration_complete: false,
    explorers: [],
    key_files: [],
    patterns: [],
    constraints: [],
  };
}

export function parseContext(text: string, filePath: string): Context {
  return parseJsonText(ContextSchema, text, filePath, "INVALID_STATE");
}

export function serializeContext(context: Context): string {
  return toText(
    orderKeys(context, Object.keys(ContextSchema.shape), {
      explorers: (list) => (list as Plain[]).map((entry) => orderKeys(entry, Object.keys(ExplorerSummarySchema.shape))),
    }),
  );
}

// ---- tasks/<id>.json and proposed/<id>.json ----------------------------------

/**
 * The seed writes `blockedBy`, and so does pu. The original read it under another
 * key, so its dependencies silently vanished; a file using any other spelling is
 * refused rather than read as "blocked by nothing".
 */
function otherBlockedBySpellings(raw: unknown): string[] {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return [];
  return Object.keys(raw)
    .filter((key) => key !== "blockedBy" && key.toLowerCase().replace(/[_-]/g, "") === "blockedby")
    .map((key) => `${key}: is not read; spell it "blockedBy"`);
}

const TaskShape = {
  id: TaskIdSchema,
  subject: NonEmpty,
  description: z.string(),
  status: TaskStatusSchema,
  blockedBy: z.array(z.string()),
  complexity: ComplexitySchema,
  criteria: z.array(z.string()),
  evidence: z.array(z.string()),
  /** pu's: the host its worker was placed on, and that worker's group there (absent: this machine). */
  placement: z
    .object({
      host: z.string().min(1),
      /** Asked again with this key (a restarted daemon), the host answers with the group it made. */
      key: z.string().min(1),
      group_id: z.string().nullish(),
      agent_id: z.string().nullish(),
      worktree_id: z.string().nullish(),
    })
    .nullish(),
};
const TASK_KEYS = Object.keys(TaskShape);

export const TaskSchema = z.looseObject(TaskShape);
export type Task = z.infer<typeof TaskSchema>;

/**
 * What a planner writes: the task schema, with what pu owns left out or at its
 * start value. `status` may only be `open`, `evidence` only empty (evidence is
 * recorded by pu, never claimed); `blockedBy` defaults to none, `complexity` to
 * `standard`, `description` to "". `criteria` must list at least one criterion.
 */
export const TaskProposalSchema = z
  .looseObject({
    id: TaskIdSchema,
    subject: NonEmpty,
    description: z.string().default(""),
    status: z.literal("open", { error: 'must be "open" (or left out): pu sets the status' }).default("open"),
    blockedBy: z.array(NonEmpty).default([]),
    complexity: ComplexitySchema.default("standard"),
    criteria: z.array(NonEmpty).min(1, "must list at least one success criterion"),
    evidence: z.array(z.string()).max(0, "must be empty (or left out): pu records evidence from the checks it runs").default([]),
    placement: z.never({ error: "must be left out: pu places workers" }).optional(),
  });
export type TaskProposal = z.infer<typeof TaskProposalSchema>;

export function parseTask(text: string, filePath: string): Task {
  return parseJsonText(TaskSchema, text, filePath, "INVALID_STATE", otherBlockedBySpellings);
}

/** Parses one proposal file; throws INVALID_ARGUMENT listing every problem. */
export function parseTaskProposal(text: string, filePath: string): Task {
  return parseJsonText(TaskProposalSchema, text, filePath, "INVALID_ARGUMENT", otherBlockedBySpellings);
}

export function serializeTask(task: Task): string {
  return toText(orderKeys(task, TASK_KEYS));
}

// ---- what explorers and the verifier write -----------------------------------

export const ExplorerHintSchema = z.looseObject({
  id: ExplorerIdSchema.refine((id) => id !== OVERVIEW_EXPLORER_ID, 'must be "exp-N": the overview has already run'),
  hint: NonEmpty,
});
export type ExplorerHint = z.infer<typeof ExplorerHintSchema>;

export const ExplorerHintsSchema = z.array(ExplorerHintSchema).superRefine((hints, ctx) => {
  const seen = new Set<string>();
  hints.forEach((hint, index) => {
    if (seen.has(hint.id)) ctx.addIssue({ code: "custom", path: [index, "id"], message: `"${hint.id}" is listed twice` });
    seen.add(hint.id);
  });
});

/** `exploration/hints.json`: `[{id, hint}]`. */
export function parseExplorerHints(text: string, filePath: string): ExplorerHint[] {
  return parseJsonText(ExplorerHintsSchema, text, filePath, "INVALID_ARGUMENT");
}

export const VerifierFailureSchema = z.looseObject({ task: NonEmpty, reason: NonEmpty });
export type VerifierFailure = z.infer<typeof VerifierFailureSchema>;

export const VerifierVerdictSchema = z
  .looseObject({ passed: z.boolean(), failures: z.array(VerifierFailureSchema).default([]) })
  .superRefine((verdict, ctx) => {
    if (verdict.passed && verdict.failures.length > 0) {
      ctx.addIssue({ code: "custom", path: ["failures"], message: "must be empty when passed is true" });
    }
    if (!verdict.passed && verdict.failures.length === 0) {
      ctx.addIssue({ code: "custom", path: ["failures"], message: "must name at least one {task, reason} when passed is false" });
    }
  });
export type VerifierVerdict = z.infer<typeof VerifierVerdictSchema>;

/** The verifier's `$PU_OUTPUT_FILE`: `{passed, failures: [{task, reason}]}`. */
export function parseVerifierVerdict(text: string, filePath: string): VerifierVerdict {
  return parseJsonText(VerifierVerdictSchema, text, filePath, "INVALID_ARGUMENT");
}

// ---- shared -------------------------------------------------------------------

type Plain = Record<string, unknown>;

/** `extraProblems` adds checks that must be reported even when the schema fails too. */
/** Known keys in schema order (nulls kept: the seed writes `approved_at: null`), then unknown keys as they were. */
function orderKeys(source: Plain, knownKeys: readonly string[], nested: Record<string, (value: unknown) => unknown> = {}): Plain {
  const out: Plain = {};
  for (const key of knownKeys) {
    if (!(key in source) || source[key] === undefined) continue;
    const transform = nested[key];
    out[key] = transform ? transform(source[key]) : source[key];
  }
  for (const [key, value] of Object.entries(source)) {
    if (!(key in out) && !knownKeys.includes(key) && value !== undefined) out[key] = value;
  }
  return out;
}

function dropNullish(source: Plain): Plain {
  return Object.fromEntries(Object.entries(source).filter(([, value]) => value !== null && value !== undefined));
}

function toText(value: Plain): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
