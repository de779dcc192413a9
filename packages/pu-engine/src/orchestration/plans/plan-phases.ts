/**
 * One plan session's driver, its first half: the loop over the phases, what is recorded on
 * the way, and the role agents of exploration and design. Execution and verification are
 * PlanDriver's (plan-driver.ts). Every step starts from what is on disk, so a restarted
 * daemon picks a session up where it was.
 */
import { promises as fs } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { PuError } from "@pu/core/errors";
import { textTail } from "@pu/core/prompt-text";
import { loadConfig, type PlanConfig } from "@pu/core/config";
import {
  FINAL_PHASES,
  parseExplorerHints,
  type EvidenceLogEntry,
  type Phase,
  type Session,
  type Task,
} from "@pu/core/plan-files";
import type { PlanRoleAssignment } from "@pu/core/plan-roles";
import { OVERVIEW_EXPLORER_ID, explorationRelativePath, planBranch, type PlanLayout } from "@pu/core/plan-layout";
import { formatProposalErrors, validateTaskProposals, withVerifyTask } from "@pu/core/task-graph";
import type { LaunchedAgent, LaunchPlacement } from "../../agents/launcher.js";
import type { TurnResult } from "../../agents/turn.js";
import type { EngineState } from "../../state.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { HostMembers } from "../../hosts/host-members.js";
import type { WorkOwner } from "../../agents/owners.js";
import { readPlan, tasksAccepted, unreadableFile, updatePlan, type PlanFiles, type UnreadableFile } from "./plan-store.js";
import { nextTurn, roleAgentName, rolePrompt, startRoleAgent, stopRoleAgents, turnSucceeded, type RoleAgent } from "./role-agent.js";
import { retireReplaced } from "../../agents/stop.js";


/** A worker the driver runs: which task, and where. */
export interface RunningWorker {
  taskId: string;
  launched: LaunchedAgent;
  /** Set by a failed `pu plan check` during the current attempt. */
  failedChecks: string[];
}

/** A worker the driver placed on a host: its ids there once the host names them. */
export interface HostWorker {
  taskId: string;
  host: string;
  agentId: string | null;
  worktreeId: string | null;
}

const MAX_OUTPUT_IN_FEEDBACK = 1500;

/** How often a session whose file cannot be read looks at it again. */
const UNREADABLE_POLL_MS = 1000;

export function tail(text: string, max = MAX_OUTPUT_IN_FEEDBACK): string {
  return textTail(text, max);
}

export function logEntry(type: string, fields: Partial<EvidenceLogEntry>): EvidenceLogEntry {
  return { timestamp: new Date().toISOString(), type, ...fields };
}

async function fileHasText(file: string): Promise<boolean> {
  try {
    return (await fs.readFile(file, "utf8")).trim().length > 0;
  } catch {
    return false;
  }
}

/** Stops a driver's loop at its next step (cancel, daemon shutdown). */
export class Stopped extends Error {}

/** A plan's budget, counted over all its role agents (the usage service answers). */
export interface PlanBudgets {
  /** Why the plan may start no further role agent ("max $1, spent $1.02"), or undefined. */
  ownerOver(root: string, owner: { kind: "plan"; id: string }, limit: PlanLimit): Promise<string | undefined>;
  /** The agent counted toward the plan; its turn interrupted, as a person would, once the plan's budget is spent. */
  limitOwner(root: string, owner: { kind: "plan"; id: string }, agentId: string, limit: PlanLimit): void;
  /** An agent whose turn just ended: its records read to the end now, so what it spent is counted whole. */
  finalFigures(root: string, agentId: string): Promise<unknown>;
}

type PlanLimit = { maxCost?: number | null; maxTokens?: number | null };

/** A plan's budget from its session options; undefined for a plan without one. */
export function planLimit(options: Session["options"]): PlanLimit | undefined {
  return options.max_cost != null || options.max_tokens != null ? { maxCost: options.max_cost, maxTokens: options.max_tokens } : undefined;
}


export abstract class PlanPhases {
  protected readonly workers = new Map<string, RunningWorker>();
  protected readonly hostWorkers = new Map<string, HostWorker>();
  protected readonly roleAgents = new Set<string>();
  /** Aborted by stop(): waits for a slot and for a host's answer end. */
  protected readonly halt = new AbortController();
  protected running: Promise<void> | undefined;
  protected wake: (() => void) | undefined;
  stopped = false;

  constructor(
    protected readonly slots: LaunchSlots,
    private readonly budgets: PlanBudgets,
    protected readonly state: EngineState,
    readonly root: string,
    readonly layout: PlanLayout,
    /** Workers placed on hosts (`pu plan start --on`) run there through this; absent: this machine only. */
    protected readonly hostMembers?: HostMembers,
  ) {}

  /** Starts (or nudges) the loop; one loop per session at a time. */
  kick(): void {
    if (this.stopped) return;
    if (this.wake) {
      const wake = this.wake;
      this.wake = undefined;
      wake();
      return;
    }
    if (this.running) {
      // Mid-loop: it may be about to stop for approval; go round once more when it does.
      this.again = true;
      return;
    }
    this.again = false;
    this.running = this.drive()
      .catch((error: unknown) => {
        if (error instanceof Stopped) return;
        this.state.log.event("plan_failed", { projectRoot: this.root, sessionId: this.layout.sessionId, error });
        return this.finish("FAILED", `pu could not go on: ${(error as Error).message}`).catch(() => undefined);
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) this.kick();
      });
  }

  /** The loop is at work (not waiting for approval, finished or stopped). */
  get driving(): boolean {
    return this.running !== undefined && !this.stopped;
  }

  /** A kick arrived while the loop ran. */
  protected again = false;

  workerFor(taskId: string): RunningWorker | undefined {
    return this.workers.get(taskId);
  }

  hostWorkerFor(taskId: string): HostWorker | undefined {
    return this.hostWorkers.get(taskId);
  }

  workerOf(agentId: string): RunningWorker | undefined {
    for (const worker of this.workers.values()) if (worker.launched.agentId === agentId) return worker;
    return undefined;
  }

  /** The agents (and workers' worktrees) this driver runs now; a role agent's worktree is found from the agent. */
  ownedWork(): WorkOwner {
    const workers = [...this.workers.values()];
    const onHosts = [...this.hostWorkers.values()];
    return {
      kind: "plan",
      id: this.layout.sessionId,
      // Role agents stay listed after they were stopped (finish stops them, the set is not cleared): only running ones count.
      agentIds: [...[...this.roleAgents].filter((id) => this.state.isRunning(id)), ...workers.map((w) => w.launched.agentId), ...onHosts.flatMap((w) => (w.agentId ? [w.agentId] : []))],
      worktreeIds: [...workers.map((w) => w.launched.worktreeId), ...onHosts.map((w) => w.worktreeId ?? undefined)].filter((id): id is string => id !== undefined),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.halt.abort();
    this.wake?.();
    await stopRoleAgents(this.state, [...this.roleAgents, ...[...this.workers.values()].map((w) => w.launched.agentId)]);
  }

  protected check(): void {
    if (this.stopped || this.state.stopping) throw new Stopped();
  }

  /** The session's file pu cannot read now, while the driver waits for it to be fixed or restored. */
  unreadable: UnreadableFile | undefined;

  /** The session's files as they are now (waiting, while one is unreadable, for it to be fixed). */
  protected read(): Promise<PlanFiles> {
    return this.whileUnreadable(() => readPlan(this.layout));
  }

  protected update<T>(change: (files: PlanFiles) => T | Promise<T>): Promise<{ files: PlanFiles; result: T }> {
    this.check();
    return this.whileUnreadable(() => updatePlan(this.layout, change));
  }

  /**
   * Runs `op` (a read or a change of the session's files); while one of the files cannot be read
   * (a person's edit gone wrong, a bad restore), the session waits: the file is named in the log
   * and in `pu plan status`, kept as it is (a change reads every file before it writes any, so
   * nothing is written over it), and read again every UNREADABLE_POLL_MS. The agents already
   * running go on (a worker whose turn ended waits at its prompt); `stop()` ends the wait.
   */
  private async whileUnreadable<T>(op: () => Promise<T>): Promise<T> {
    let since: string | undefined;
    for (;;) {
      try {
        const result = await op();
        if (since !== undefined) await this.recovered(since);
        return result;
      } catch (error) {
        const bad = unreadableFile(error);
        if (!bad) throw error;
        if (this.stopped || this.state.stopping) throw new Stopped();
        if (since === undefined || bad.file !== this.unreadable?.file || bad.reason !== this.unreadable.reason) {
          this.state.log.event("plan_file_unreadable", { projectRoot: this.root, sessionId: this.layout.sessionId, file: bad.file, reason: bad.reason });
        }
        since ??= new Date().toISOString();
        this.unreadable = bad;
        try {
          await sleep(UNREADABLE_POLL_MS, undefined, { signal: this.halt.signal });
        } catch {
          throw new Stopped();
        }
      }
    }
  }

  /** The session's files read again after `since`: the wait goes into the evidence log. */
  private async recovered(since: string): Promise<void> {
    const bad = this.unreadable;
    this.unreadable = undefined;
    if (!bad) return;
    this.state.log.event("plan_file_readable", { projectRoot: this.root, sessionId: this.layout.sessionId, file: bad.file });
    await updatePlan(this.layout, (files) => {
      files.session.evidence_log.push(logEntry("files_unreadable", { status: "recovered", summary: `${bad.file} could not be read from ${since} until it was fixed (${bad.reason.slice(0, 500)}); pu waited, leaving the file as it was and its agents running` }));
    }).catch((error: unknown) => this.state.log.event("plan_file_recovery_unrecorded", { projectRoot: this.root, sessionId: this.layout.sessionId, error }));
  }

  protected async log(type: string, fields: Partial<EvidenceLogEntry>): Promise<void> {
    await this.update((files) => {
      files.session.evidence_log.push(logEntry(type, fields));
    });
  }

  protected async setPhase(phase: Phase, extra?: (session: Session) => void): Promise<void> {
    await this.update((files) => {
      files.session.phase = phase;
      extra?.(files.session);
      files.session.evidence_log.push(logEntry("phase", { status: phase, summary: `phase ${phase}` }));
    });
    this.state.events.emit("plan_phase", { projectRoot: this.root, sessionId: this.layout.sessionId, phase });
  }

  protected async finish(phase: "COMPLETE" | "FAILED", summary: string): Promise<void> {
    await this.whileUnreadable(() => updatePlan(this.layout, (files) => {
      if (FINAL_PHASES.includes(files.session.phase)) return;
      files.session.phase = phase;
      files.session.evidence_log.push(logEntry("phase", { status: phase, summary }));
    }));
    this.state.events.emit("plan_phase", { projectRoot: this.root, sessionId: this.layout.sessionId, phase });
    await stopRoleAgents(this.state, [...this.roleAgents]);
  }

  protected async config(): Promise<PlanConfig> {
    return (await loadConfig(this.root)).plan;
  }

  protected async drive(): Promise<void> {
    for (;;) {
      this.check();
      const { session } = await this.read();
      if (FINAL_PHASES.includes(session.phase)) return;
      if (session.phase === "EXPLORATION") {
        await this.explore(session);
        await this.setPhase("PLANNING");
      } else if (session.phase === "PLANNING") {
        const go = await this.plan();
        if (!go) return; // waits for `pu plan approve` / `pu plan run`, which kick again
        await this.setPhase("EXECUTION");
      } else if (session.phase === "EXECUTION") {
        const outcome = await this.execute();
        if (outcome === "stuck") return;
        const fresh = await this.read();
        if (fresh.session.options.skip_verify) {
          await this.finish("COMPLETE", `every task resolved (verification skipped); ${planBranch(this.layout.sessionId)} is ready for \`pu plan merge ${this.layout.sessionId}\``);
          return;
        }
        await this.setPhase("VERIFICATION");
      } else if (session.phase === "VERIFICATION") {
        await this.verify();
      }
    }
  }

  // ---- roles ----------------------------------------------------------------------

  /** Why the plan's budget (`planLimit` of its options) lets nothing more run ("max $1, spent $1.02"); undefined while under it or without one. */
  protected async budgetSpent(limit: PlanLimit | undefined): Promise<string | undefined> {
    return limit ? this.budgets.ownerOver(this.root, { kind: "plan", id: this.layout.sessionId }, limit) : undefined;
  }

  /**
   * Why the plan's budget is spent as a worker's turn ends (undefined while under it, or without
   * one): a worker here has its records read to the end first, so its last answer counts (a host
   * reads its own to the end when asked).
   */
  protected async budgetSpentAsTurnEnds(agentId: string | undefined): Promise<string | undefined> {
    const limit = await this.limitOnDisk();
    if (!limit) return undefined;
    if (agentId) await this.budgets.finalFigures(this.root, agentId);
    return this.budgetSpent(limit);
  }

  private async limitOnDisk(): Promise<PlanLimit | undefined> {
    return planLimit((await this.read()).session.options);
  }

  private async refusePastBudget(limit: PlanLimit | undefined, what: string): Promise<void> {
    const spent = await this.budgetSpent(limit);
    if (spent !== undefined) throw new PuError("INVALID_STATE", `the plan's budget is spent (${spent}): ${what}; its worktrees and branch keep what was done`);
  }

  /** Every role agent starts here: not once the plan's budget is spent, and counted toward it. */
  protected async startRole(assignment: PlanRoleAssignment, prompt: string, placement: LaunchPlacement): Promise<RoleAgent> {
    const limit = await this.limitOnDisk();
    await this.refusePastBudget(limit, `no further ${assignment.role} starts`);
    const role = await startRoleAgent(this.state, this.root, this.layout, assignment, prompt, placement);
    if (limit) this.budgets.limitOwner(this.root, { kind: "plan", id: this.layout.sessionId }, role.launched.agentId, limit);
    // The same role's agent before the daemon stopped (benched with the rest) is replaced by this
    // one: a worker's in the task's worktree, other roles' by their agent's name (role names are
    // per session and role, so nothing else carries them).
    const name = roleAgentName(this.layout.sessionId, assignment);
    await retireReplaced(this.state, this.root, ({ agent, worktree }) => agent.name === name || worktree?.name === name, role.launched.agentId, "plan");
    return role;
  }

  /** Every further turn of a role agent is typed here: none once the plan's budget is spent. */
  protected async typeTurn(launched: LaunchedAgent, text: string): Promise<TurnResult> {
    await this.refusePastBudget(await this.limitOnDisk(), `${launched.agentId} is given no further turn`);
    return nextTurn(this.state, launched, text);
  }

  /**
   * Runs a role agent's first turn and then, while `problems()` finds something wrong, types
   * the problems back (bounded retries). Returns the problems left (empty: done).
   */
  protected async roleTurns(
    start: () => Promise<{ launched: LaunchedAgent; firstTurn: Promise<TurnResult> }>,
    problems: (turn: TurnResult) => Promise<string[]>,
    retries: number,
  ): Promise<{ problems: string[]; launched: LaunchedAgent }> {
    const { launched, firstTurn } = await start();
    this.roleAgents.add(launched.agentId);
    let result = await firstTurn;
    for (let attempt = 0; ; attempt++) {
      this.check();
      const found = turnSucceeded(result) ? await problems(result) : [`the agent ${result.outcome === "exited" ? `exited (code ${result.exitCode ?? "?"})` : result.outcome} before finishing`];
      if (found.length === 0 || attempt >= retries || result.outcome !== "waiting") return { problems: found, launched };
      result = await this.typeTurn(launched, `pu: not done yet:\n${found.map((p) => `- ${p}`).join("\n")}\nPlease fix this and end your turn.`);
    }
  }

  protected async explore(session: Session): Promise<void> {
    const retries = (await this.config()).retries;
    const overviewFile = this.layout.exploration(OVERVIEW_EXPLORER_ID);
    await this.update((files) => {
      files.session.exploration_stage = "overview";
    });
    if (!(await fileHasText(overviewFile))) {
      const prompt = await rolePrompt(this.state, this.root, "explorer", {
        GOAL: session.goal,
        EXPLORER_ID: OVERVIEW_EXPLORER_ID,
        HINT: "Survey the whole project: its layout, how it is built and tested, and what the goal touches.",
        OUTPUT_FILE: overviewFile,
        PLAN_DIR: this.layout.dir,
      });
      const { problems } = await this.roleTurns(
        () => this.startRole({ role: "explorer", explorerId: OVERVIEW_EXPLORER_ID }, prompt, { kind: "root" }),
        async () => [
          ...((await fileHasText(overviewFile)) ? [] : [`write your findings to ${overviewFile}`]),
          ...(await this.hintProblems()),
        ],
        retries,
      );
      if (problems.length > 0) throw new PuError("INVALID_STATE", `the overview explorer did not finish: ${problems.join("; ")}`);
    }
    const hints = await this.readHints();
    await this.update((files) => {
      files.session.exploration_stage = hints.length > 0 ? "targeted" : "complete";
      files.context.expected_explorers = [OVERVIEW_EXPLORER_ID, ...hints.map((h) => h.id)];
    });
    // Targeted explorers in parallel, under the plan's worker cap.
    const maxWorkers = session.options.max_workers || Number.POSITIVE_INFINITY;
    const pending = [...hints];
    const failures: string[] = [];
    const runOne = async (hint: { id: string; hint: string }): Promise<void> => {
      const file = this.layout.exploration(hint.id);
      if (await fileHasText(file)) return;
      const prompt = await rolePrompt(this.state, this.root, "explorer", { GOAL: session.goal, EXPLORER_ID: hint.id, HINT: hint.hint, OUTPUT_FILE: file, PLAN_DIR: this.layout.dir });
      const { problems } = await this.roleTurns(
        () => this.startRole({ role: "explorer", explorerId: hint.id }, prompt, { kind: "root" }),
        async () => ((await fileHasText(file)) ? [] : [`write your findings to ${file}`]),
        retries,
      );
      if (problems.length > 0) failures.push(`${hint.id}: ${problems.join("; ")}`);
    };
    const lanes = Array.from({ length: Math.min(maxWorkers, pending.length) }, async () => {
      for (let hint = pending.shift(); hint; hint = pending.shift()) await runOne(hint);
    });
    await Promise.all(lanes);
    if (failures.length > 0) throw new PuError("INVALID_STATE", `explorers did not finish: ${failures.join("; ")}`);
    await this.update(async (files) => {
      files.session.exploration_stage = "complete";
      files.context.exploration_complete = true;
      files.context.explorers = await Promise.all(
        [OVERVIEW_EXPLORER_ID, ...hints.map((h) => h.id)].map(async (id) => {
          const text = await fs.readFile(this.layout.exploration(id), "utf8").catch(() => "");
          const firstLine = text.split("\n").find((line) => line.trim() && !line.startsWith("#"))?.trim() ?? "";
          return { id, hint: hints.find((h) => h.id === id)?.hint ?? "overview", file: explorationRelativePath(id), summary: firstLine.slice(0, 200) };
        }),
      );
    });
    await stopRoleAgents(this.state, [...this.roleAgents], "plan");
    this.roleAgents.clear();
  }

  protected async readHints(): Promise<{ id: string; hint: string }[]> {
    let text: string;
    try {
      text = await fs.readFile(this.layout.hints, "utf8");
    } catch {
      return [];
    }
    return parseExplorerHints(text, this.layout.hints);
  }

  protected async hintProblems(): Promise<string[]> {
    try {
      await this.readHints();
      return [];
    } catch (error) {
      return [(error as Error).message];
    }
  }

  /** The planner's design and proposed tasks as they are now: what is missing or wrong, and the tasks when nothing is. */
  protected async plannerOutput(logRejection: boolean): Promise<{ problems: string[]; tasks: Task[] }> {
    const problems: string[] = [];
    if (!(await fileHasText(this.layout.design))) problems.push(`write the design to ${this.layout.design}`);
    const names = (await fs.readdir(this.layout.proposedDir).catch(() => [] as string[])).filter((n) => n.endsWith(".json"));
    const files = await Promise.all(names.map(async (name) => ({ name, text: await fs.readFile(`${this.layout.proposedDir}/${name}`, "utf8") })));
    const validation = validateTaskProposals(files);
    if (validation.errors.length > 0) {
      problems.push(formatProposalErrors(validation.errors));
      if (logRejection) await this.log("plan_rejected", { status: "failed", summary: validation.errors.join("; ") });
    }
    return { problems, tasks: validation.tasks };
  }

  /** PLANNING: the planner's design and tasks, validated; then approval. Returns whether to execute now. */
  protected async plan(): Promise<boolean> {
    let { session, tasks } = await this.read();
    if (!tasksAccepted({ session, tasks })) {
      // The proposals stay until their acceptance is written, so an interrupted one is taken
      // again from them; the planner runs only when they are not (yet) a usable plan. Only with
      // task files: they say the planner's turn had ended and its proposals were checked (without
      // them, proposals may be a planner's half-written ones).
      const settled = tasks.length > 0 ? await this.plannerOutput(false) : undefined;
      let taken = settled?.tasks ?? [];
      if (settled === undefined || settled.problems.length > 0) {
        const retries = (await this.config()).retries;
        const prompt = await rolePrompt(this.state, this.root, "planner", { GOAL: session.goal, PLAN_DIR: this.layout.dir, OUTPUT_FILE: this.layout.design, FEEDBACK: "" });
        const { problems } = await this.roleTurns(
          () => this.startRole({ role: "planner" }, prompt, { kind: "root" }),
          async () => {
            const output = await this.plannerOutput(true);
            taken = output.tasks;
            return output.problems;
          },
          retries,
        );
        if (problems.length > 0) {
          await this.finish("FAILED", `the planner's plan was not usable: ${problems.join("; ")}`);
          throw new Stopped();
        }
      }
      await this.update((files) => {
        files.tasks = withVerifyTask(taken, files.session.options);
        files.session.evidence_log.push(logEntry("plan_accepted", { status: "passed", summary: `${taken.length} task(s) accepted` }));
      });
      for (const name of await fs.readdir(this.layout.proposedDir).catch(() => [] as string[])) await fs.rm(`${this.layout.proposedDir}/${name}`, { force: true });
      await stopRoleAgents(this.state, [...this.roleAgents], "plan");
      this.roleAgents.clear();
      ({ session, tasks } = await this.read());
    }
    if (session.plan.approved_at === null) {
      if (!session.options.auto_mode) return false;
      await this.update((files) => {
        files.session.plan.approved_at = new Date().toISOString();
        files.session.evidence_log.push(logEntry("plan_approved", { status: "passed", summary: "approved automatically (--auto)" }));
      });
    }
    return !session.options.plan_only;
  }


  // Execution and verification: PlanDriver (plan-driver.ts).
  protected abstract execute(): Promise<"done" | "stuck">;
  protected abstract verify(): Promise<void>;
}
