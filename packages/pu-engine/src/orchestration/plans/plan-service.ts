/**
 * Plan sessions (docs/plans.md): one goal → explorers → a planner's design and task graph →
 * workers on ready tasks in their own worktrees → verification, with the daemon enforcing
 * every rule: the caps, the dependencies, evidence from checks it ran itself, merges into the
 * plan's integration branch, and the iteration limit.
 *
 * One driver per session walks its phases. Every step starts from what is on disk, so a
 * restarted daemon picks a session up where it was: an in-progress task whose worker is gone
 * gets a new worker in the same worktree, re-prompted.
 */
import { promises as fs } from "node:fs";
import { PuError } from "@pu/core/errors";
import { planSettingsTrustItem } from "@pu/core/trust";
import { PLAN_ROLES } from "@pu/core/plan-roles";
import { loadConfig, type PlanConfig } from "@pu/core/config";
import {
  FINAL_PHASES,
  checkEvidence,
  newContext,
  newSession,
  parseExplorerHints,
  parseVerifierVerdict,
  type EvidenceLogEntry,
  type Phase,
  type Session,
  type SessionOptions,
  type Task,
} from "@pu/core/plan-files";
import { OVERVIEW_EXPLORER_ID, VERIFY_TASK_ID, explorationRelativePath, newPlanSessionId, planBranch, type PlanLayout } from "@pu/core/plan-layout";
import { applyVerdict, executionState, formatProposalErrors, pickTasksToStart, stuckReason, taskGraphErrors, validateTaskProposals, withVerifyTask } from "@pu/core/task-graph";
import { requireAgentProgram, type LaunchedAgent } from "../../agents/launcher.js";
import { markFinished } from "../../agents/stop.js";
import type { TurnResult } from "../../agents/turn.js";
import { currentBranch, git, gitOrFail } from "../../git/runner.js";
import { commitAllChanges } from "../../git/commit.js";
import { mergeWorktree, MergeConflictError } from "../../git/merge.js";
import { runGate } from "../../gates/gates.js";
import type { EngineState } from "../../state.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { WorkOwner } from "../../agents/owners.js";
import { PLAN_BASE_BRANCH_FIELD } from "./plan-merge.js";
import { createPlan, layoutOf, listPlanIds, readPlan, updatePlan, type PlanFiles } from "./plan-store.js";
import { nextTurn, planTemplateTrustItems, roleAgentName, rolePrompt, startRoleAgent, stopRoleAgents, turnSucceeded } from "./role-agent.js";
import { worktreesDir } from "@pu/core/paths";

export interface PlanStartOptions {
  goal: string;
  maxWorkers?: number;
  maxIterations?: number;
  skipVerify?: boolean;
  planOnly?: boolean;
  auto?: boolean;
}

/** A worker the driver runs: which task, and where. */
interface RunningWorker {
  taskId: string;
  launched: LaunchedAgent;
  /** Set by a failed `pu plan check` during the current attempt. */
  failedChecks: string[];
}

const MAX_OUTPUT_IN_FEEDBACK = 1500;

function tail(text: string, max = MAX_OUTPUT_IN_FEEDBACK): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}

function logEntry(type: string, fields: Partial<EvidenceLogEntry>): EvidenceLogEntry {
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
class Stopped extends Error {}

class PlanDriver {
  private readonly workers = new Map<string, RunningWorker>();
  private readonly roleAgents = new Set<string>();
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  stopped = false;

  constructor(
    private readonly service: PlanService,
    private readonly state: EngineState,
    readonly root: string,
    readonly layout: PlanLayout,
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

  /** A kick arrived while the loop ran. */
  private again = false;

  workerFor(taskId: string): RunningWorker | undefined {
    return this.workers.get(taskId);
  }

  workerOf(agentId: string): RunningWorker | undefined {
    for (const worker of this.workers.values()) if (worker.launched.agentId === agentId) return worker;
    return undefined;
  }

  /** The agents (and workers' worktrees) this driver runs now; a role agent's worktree is found from the agent. */
  ownedWork(): WorkOwner {
    const workers = [...this.workers.values()];
    return {
      kind: "plan",
      id: this.layout.sessionId,
      // Role agents stay listed after they were stopped (finish stops them, the set is not cleared): only running ones count.
      agentIds: [...[...this.roleAgents].filter((id) => this.state.isRunning(id)), ...workers.map((w) => w.launched.agentId)],
      worktreeIds: workers.map((w) => w.launched.worktreeId).filter((id): id is string => id !== undefined),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await stopRoleAgents(this.state, [...this.roleAgents, ...[...this.workers.values()].map((w) => w.launched.agentId)]);
  }

  private check(): void {
    if (this.stopped || this.state.stopping) throw new Stopped();
  }

  private update<T>(change: (files: PlanFiles) => T | Promise<T>): Promise<{ files: PlanFiles; result: T }> {
    this.check();
    return updatePlan(this.layout, change);
  }

  private async log(type: string, fields: Partial<EvidenceLogEntry>): Promise<void> {
    await this.update((files) => {
      files.session.evidence_log.push(logEntry(type, fields));
    });
  }

  private async setPhase(phase: Phase, extra?: (session: Session) => void): Promise<void> {
    await this.update((files) => {
      files.session.phase = phase;
      extra?.(files.session);
      files.session.evidence_log.push(logEntry("phase", { status: phase, summary: `phase ${phase}` }));
    });
    this.state.events.emit("plan_phase", { projectRoot: this.root, sessionId: this.layout.sessionId, phase });
  }

  private async finish(phase: "COMPLETE" | "FAILED", summary: string): Promise<void> {
    await updatePlan(this.layout, (files) => {
      if (FINAL_PHASES.includes(files.session.phase)) return;
      files.session.phase = phase;
      files.session.evidence_log.push(logEntry("phase", { status: phase, summary }));
    });
    this.state.events.emit("plan_phase", { projectRoot: this.root, sessionId: this.layout.sessionId, phase });
    await stopRoleAgents(this.state, [...this.roleAgents]);
  }

  private async config(): Promise<PlanConfig> {
    return (await loadConfig(this.root)).plan;
  }

  private async drive(): Promise<void> {
    for (;;) {
      this.check();
      const { session } = await readPlan(this.layout);
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
        const fresh = await readPlan(this.layout);
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

  /**
   * Runs a role agent's first turn and then, while `problems()` finds something wrong, types
   * the problems back (bounded retries). Returns the problems left (empty: done).
   */
  private async roleTurns(
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
      result = await nextTurn(this.state, launched, `pu: not done yet:\n${found.map((p) => `- ${p}`).join("\n")}\nPlease fix this and end your turn.`);
    }
  }

  private async explore(session: Session): Promise<void> {
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
        () => startRoleAgent(this.state, this.root, this.layout, { role: "explorer", explorerId: OVERVIEW_EXPLORER_ID }, prompt, { kind: "root" }),
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
        () => startRoleAgent(this.state, this.root, this.layout, { role: "explorer", explorerId: hint.id }, prompt, { kind: "root" }),
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

  private async readHints(): Promise<{ id: string; hint: string }[]> {
    let text: string;
    try {
      text = await fs.readFile(this.layout.hints, "utf8");
    } catch {
      return [];
    }
    return parseExplorerHints(text, this.layout.hints);
  }

  private async hintProblems(): Promise<string[]> {
    try {
      await this.readHints();
      return [];
    } catch (error) {
      return [(error as Error).message];
    }
  }

  /** PLANNING: the planner's design and tasks, validated; then approval. Returns whether to execute now. */
  private async plan(): Promise<boolean> {
    let { session, tasks } = await readPlan(this.layout);
    if (tasks.length === 0) {
      const retries = (await this.config()).retries;
      const prompt = await rolePrompt(this.state, this.root, "planner", { GOAL: session.goal, PLAN_DIR: this.layout.dir, OUTPUT_FILE: this.layout.design, FEEDBACK: "" });
      let accepted: Task[] = [];
      const { problems } = await this.roleTurns(
        () => startRoleAgent(this.state, this.root, this.layout, { role: "planner" }, prompt, { kind: "root" }),
        async () => {
          const found: string[] = [];
          if (!(await fileHasText(this.layout.design))) found.push(`write the design to ${this.layout.design}`);
          const names = (await fs.readdir(this.layout.proposedDir).catch(() => [] as string[])).filter((n) => n.endsWith(".json"));
          const files = await Promise.all(names.map(async (name) => ({ name, text: await fs.readFile(`${this.layout.proposedDir}/${name}`, "utf8") })));
          const validation = validateTaskProposals(files);
          if (validation.errors.length > 0) {
            found.push(formatProposalErrors(validation.errors));
            await this.log("plan_rejected", { status: "failed", summary: validation.errors.join("; ") });
          }
          accepted = validation.tasks;
          return found;
        },
        retries,
      );
      if (problems.length > 0) {
        await this.finish("FAILED", `the planner's plan was not usable: ${problems.join("; ")}`);
        throw new Stopped();
      }
      await this.update(async (files) => {
        files.tasks = withVerifyTask(accepted, files.session.options);
        files.session.evidence_log.push(logEntry("plan_accepted", { status: "passed", summary: `${accepted.length} task(s) accepted` }));
      });
      for (const name of await fs.readdir(this.layout.proposedDir).catch(() => [] as string[])) await fs.rm(`${this.layout.proposedDir}/${name}`, { force: true });
      await stopRoleAgents(this.state, [...this.roleAgents], "plan");
      this.roleAgents.clear();
      ({ session, tasks } = await readPlan(this.layout));
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

  // ---- execution ----------------------------------------------------------------

  private async execute(): Promise<"done" | "stuck"> {
    const inFlight = new Map<string, Promise<void>>();
    const slots = this.service.slots;
    // tasks/ edited by hand since planning (a cycle, a blockedBy naming no task): no worker could ever finish the graph.
    const graph = taskGraphErrors((await readPlan(this.layout)).tasks);
    if (graph.length > 0) {
      await this.finish("FAILED", `the task graph cannot run: ${graph.join("; ")}`);
      return "stuck";
    }
    // Tasks a dead daemon left in progress: a new worker in the task's worktree, re-prompted.
    for (const task of (await readPlan(this.layout)).tasks) {
      if (task.status === "in_progress" && task.id !== VERIFY_TASK_ID && !this.workers.has(task.id)) {
        const release = slots.take(this.root);
        inFlight.set(task.id, this.runWorker(task).finally(release));
      }
    }
    for (;;) {
      this.check();
      const { session, tasks } = await readPlan(this.layout);
      const status = executionState(tasks);
      if (status.kind === "done" && inFlight.size === 0) return "done";
      if (status.kind === "stuck" && inFlight.size === 0) {
        await this.finish("FAILED", stuckReason(tasks));
        return "stuck";
      }
      const free = slots.paused() ? 0 : await slots.free(this.root);
      const picks = pickTasksToStart(tasks, { maxWorkers: session.options.max_workers, freeSlots: free }).filter((t) => !inFlight.has(t.id));
      for (const task of picks) {
        // The worker counts against the queue's caps from now until its task settles.
        const release = slots.take(this.root);
        await this.update((files) => {
          const t = files.tasks.find((x) => x.id === task.id);
          if (t) t.status = "in_progress";
          files.session.evidence_log.push(logEntry("task_started", { task_id: task.id, status: "in_progress", summary: `worker started on ${task.id}` }));
        });
        inFlight.set(task.id, this.runWorker(task).finally(release));
      }
      if (inFlight.size === 0) {
        // Nothing running and nothing could start (paused, no slot): wait for a change.
        await new Promise<void>((resolve) => {
          const off = slots.onChange(() => {
            off();
            resolve();
          });
          this.wake = () => {
            off();
            resolve();
          };
        });
        this.wake = undefined;
        continue;
      }
      const settled = await Promise.race([...inFlight].map(([id, p]) => p.then(() => id, () => id)));
      inFlight.delete(settled);
    }
  }

  /** One task from start to resolved or failed. Never rejects for the task's own failures. */
  private async runWorker(task: Task): Promise<void> {
    const { session } = await readPlan(this.layout);
    const config = await this.config();
    const branch = planBranch(session.session_id);
    const name = roleAgentName(session.session_id, { role: "worker", taskId: task.id });
    const m = await this.state.store.read(this.root);
    const oldWorktree = Object.values(m.worktrees).find((w) => w.name === name && w.status === "active");
    const prompt = await rolePrompt(this.state, this.root, "worker", {
      GOAL: session.goal,
      TASK_ID: task.id,
      TASK_SUBJECT: task.subject,
      TASK_DESCRIPTION: task.description,
      TASK_CRITERIA: task.criteria.map((c) => `- ${c}`).join("\n"),
      PLAN_DIR: this.layout.dir,
      OUTPUT_FILE: this.layout.report(task.id),
      FEEDBACK: oldWorktree ? "pu restarted while you worked on this task; your worktree holds what was done so far." : "",
    });
    let launched: LaunchedAgent;
    let result: TurnResult;
    try {
      const role = await startRoleAgent(
        this.state,
        this.root,
        this.layout,
        { role: "worker", taskId: task.id },
        prompt,
        oldWorktree ? { kind: "worktree", worktree: oldWorktree.id } : { kind: "new", name, base: branch },
      );
      launched = role.launched;
      const worker: RunningWorker = { taskId: task.id, launched, failedChecks: [] };
      this.workers.set(task.id, worker);
      result = await role.firstTurn;
      for (let attempt = 0; ; attempt++) {
        this.check();
        const problems = turnSucceeded(result) ? await this.taskProblems(worker, config) : [`the worker ${result.outcome === "exited" ? `exited (code ${result.exitCode ?? "?"})` : result.outcome}`];
        if (problems.length === 0) {
          await this.resolveTask(task.id, `resolved after ${attempt + 1} turn(s)`);
          markFinished(launched.live, "plan");
          break;
        }
        if (attempt >= config.retries || result.outcome !== "waiting") {
          await this.failTask(task.id, problems.join("; "));
          break;
        }
        worker.failedChecks = [];
        result = await nextTurn(this.state, launched, `pu: task ${task.id} is not resolved yet:\n${problems.map((p) => `- ${p}`).join("\n")}\nFix this and end your turn.`);
      }
    } catch (error) {
      if (error instanceof Stopped) throw error;
      await this.failTask(task.id, (error as Error).message).catch(() => undefined);
    } finally {
      const worker = this.workers.get(task.id);
      this.workers.delete(task.id);
      if (worker) await stopRoleAgents(this.state, [worker.launched.agentId]);
    }
  }

  /** What keeps a task from resolving after its worker's turn: failed checks, the task gate, the merge. */
  private async taskProblems(worker: RunningWorker, config: PlanConfig): Promise<string[]> {
    if (worker.failedChecks.length > 0) return worker.failedChecks.map((c) => `a check failed: ${c}`);
    const cwd = worker.launched.cwd;
    if (config.taskGate) {
      const ran = await this.runCheck(worker, config.taskGate, config.checkTimeoutSeconds, "test_result");
      if (ran.exitCode !== 0) return [`the task gate failed: ${config.taskGate} (exit ${ran.exitCode}):\n${tail(ran.output)}`];
    }
    // pu commits what the worker left, with the task's subject, then merges into the integration branch.
    const { tasks, session } = await readPlan(this.layout);
    const task = tasks.find((t) => t.id === worker.taskId);
    await commitAllChanges(cwd, `${worker.taskId}: ${task?.subject ?? worker.taskId}`);
    const branch = worker.launched.branch;
    if (!branch) return [];
    try {
      await mergeWorktree({
        projectRoot: this.root,
        path: cwd,
        branch,
        baseBranch: planBranch(session.session_id),
        strategy: "merge",
        message: `Merge task ${worker.taskId}: ${task?.subject ?? ""}`.trim(),
        worktreesDir: worktreesDir(this.root),
      });
    } catch (error) {
      if (error instanceof MergeConflictError) {
        return [`merging into ${planBranch(session.session_id)} conflicts in ${error.details.conflicts.join(", ")}: run \`git merge ${planBranch(session.session_id)}\` in your worktree, resolve, commit`];
      }
      throw error;
    }
    return [];
  }

  private async resolveTask(taskId: string, summary: string): Promise<void> {
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t) t.status = "resolved";
      files.session.evidence_log.push(logEntry("task_resolved", { task_id: taskId, status: "resolved", summary }));
    });
  }

  private async failTask(taskId: string, reason: string): Promise<void> {
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t) t.status = "failed";
      files.session.evidence_log.push(logEntry("task_failed", { task_id: taskId, status: "failed", summary: reason.slice(0, 2000) }));
    });
  }

  /** Runs a command in a worker's worktree and records it as the task's evidence (a failure too). */
  async runCheck(worker: RunningWorker, command: string, timeoutSeconds: number, type: "command_output" | "test_result" = "command_output"): Promise<{ exitCode: number; output: string; durationMs: number }> {
    const outcome = await runGate({ command, cwd: worker.launched.cwd, timeoutSeconds, env: { PU_TASK_ID: worker.taskId } });
    const exitCode = outcome.exitCode ?? 124;
    const { entry, line } = checkEvidence({ taskId: worker.taskId, agentId: worker.launched.agentId, command, exitCode, durationMs: outcome.durationMs, output: outcome.output, type });
    await this.update((files) => {
      files.session.evidence_log.push(entry);
      files.tasks.find((t) => t.id === worker.taskId)?.evidence.push(line);
    });
    if (exitCode !== 0) worker.failedChecks.push(`${command} (exit ${exitCode}):\n${tail(outcome.output)}`);
    return { exitCode, output: outcome.output, durationMs: outcome.durationMs };
  }

  // ---- verification -------------------------------------------------------------

  private async verify(): Promise<void> {
    const config = await this.config();
    const { session } = await readPlan(this.layout);
    const iteration = session.iteration;
    const verdictFile = this.layout.verdict(iteration);
    const branch = planBranch(session.session_id);
    const prompt = await rolePrompt(this.state, this.root, "verifier", { ITERATION: String(iteration), GOAL: session.goal, PLAN_DIR: this.layout.dir, OUTPUT_FILE: verdictFile, FEEDBACK: "" });
    const commandFailures: { task: string; reason: string }[] = [];
    let verdictProblems: string[] = [];
    const { problems, launched } = await this.roleTurns(
      async () => {
        const role = await startRoleAgent(this.state, this.root, this.layout, { role: "verifier", iteration }, prompt, { kind: "new", name: roleAgentName(session.session_id, { role: "verifier", iteration }), base: branch });
        // The session's from now on (pu clean/kill leave it alone), not only once the commands below ran.
        this.roleAgents.add(role.launched.agentId);
        // The verify commands run on the integration branch (the verifier's checkout) while it starts.
        for (const command of config.verify) {
          const outcome = await runGate({ command, cwd: role.launched.cwd, timeoutSeconds: config.checkTimeoutSeconds });
          const exitCode = outcome.exitCode ?? 124;
          const { entry } = checkEvidence({ taskId: VERIFY_TASK_ID, agentId: role.launched.agentId, command, exitCode, durationMs: outcome.durationMs, output: outcome.output, type: "test_result" });
          await this.update((files) => {
            files.session.evidence_log.push(entry);
          });
          if (exitCode !== 0) commandFailures.push({ task: VERIFY_TASK_ID, reason: `${command} exited ${exitCode}: ${tail(outcome.output, 300)}` });
        }
        return role;
      },
      async () => {
        try {
          const { tasks } = await readPlan(this.layout);
          const verdict = parseVerifierVerdict(await fs.readFile(verdictFile, "utf8"), verdictFile);
          applyVerdict(session, tasks, verdict); // throws for a verdict naming no task
          verdictProblems = [];
        } catch (error) {
          verdictProblems = [`write a valid verdict to ${verdictFile}: ${(error as Error).message}`];
        }
        return verdictProblems;
      },
      config.retries,
    );
    await stopRoleAgents(this.state, [launched.agentId], problems.length === 0 ? "plan" : undefined);
    this.roleAgents.delete(launched.agentId);
    if (problems.length > 0) {
      await this.finish("FAILED", `the verifier gave no usable verdict: ${problems.join("; ")}`);
      throw new Stopped();
    }
    const fresh = await readPlan(this.layout);
    const given = parseVerifierVerdict(await fs.readFile(verdictFile, "utf8"), verdictFile);
    // A verify command that failed fails the verdict, whatever the verifier wrote.
    const verdict = commandFailures.length > 0 ? { ...given, passed: false, failures: [...given.failures, ...commandFailures] } : given;
    const outcome = applyVerdict(fresh.session, fresh.tasks, verdict);
    await this.update((files) => {
      files.tasks = outcome.tasks;
      files.session.evidence_log.push(
        logEntry("verification", { task_id: VERIFY_TASK_ID, status: verdict.passed ? "passed" : "failed", summary: verdict.passed ? `iteration ${iteration} passed` : verdict.failures.map((f) => `${f.task}: ${f.reason}`).join("; ") }),
      );
      if (outcome.kind === "retry") {
        files.session.iteration = outcome.iteration;
        files.session.phase = "EXECUTION";
      }
    });
    if (outcome.kind === "complete") await this.finish("COMPLETE", `verified in iteration ${iteration}; ${branch} is ready for \`pu plan merge ${session.session_id}\``);
    else if (outcome.kind === "failed") {
      await this.finish("FAILED", `verification failed at the iteration limit: ${outcome.reasons.join("; ")}`);
      throw new Stopped();
    }
  }
}

export interface PlanSummary {
  sessionId: string;
  goal: string;
  phase: Phase;
  explorationStage: string;
  iteration: number;
  approvedAt: string | null;
  tasks: { id: string; subject: string; status: string; blockedBy: string[]; worker?: string }[];
  options: SessionOptions;
  dir: string;
  branch: string;
  /** Why the session FAILED (the evidence log's last word on it); null otherwise. */
  failure: string | null;
  /** What is wrong with the task graph on disk now (a cycle, a blockedBy naming no task). */
  problems: string[];
}

/** A session `pu plan list` could not read: named with its file and why, never left out. */
export interface UnreadablePlan {
  sessionId: string;
  file: string;
  reason: string;
}

export class PlanService {
  private readonly drivers = new Map<string, PlanDriver>();

  constructor(
    private readonly state: EngineState,
    readonly slots: LaunchSlots,
  ) {}

  private driver(root: string, sessionId: string): PlanDriver {
    const key = `${root}\0${sessionId}`;
    let driver = this.drivers.get(key);
    if (!driver) {
      driver = new PlanDriver(this, this.state, root, layoutOf(root, sessionId));
      this.drivers.set(key, driver);
    }
    return driver;
  }

  /** The work of the project's running sessions, for `pu clean` and `pu kill`. */
  ownedWork(root: string): WorkOwner[] {
    return [...this.drivers.values()]
      .filter((d) => d.root === root && !d.stopped)
      .map((d) => d.ownedWork())
      .filter((owner) => owner.agentIds.length > 0 || owner.worktreeIds.length > 0);
  }

  async start(root: string, options: PlanStartOptions): Promise<PlanSummary> {
    const config = await loadConfig(root);
    // The plan's checks, its role agents and the role templates it types all come from the project.
    await this.state.trust.require(root, [planSettingsTrustItem(root, config.plan), ...(await planTemplateTrustItems(this.state, root))]);
    // Every role's program, before the session exists: not an EXPLORATION that fails a moment later.
    for (const type of new Set(PLAN_ROLES.map((role) => config.plan.agents[role] ?? config.defaultAgent))) requireAgentProgram(config, type, root);
    const sessionId = newPlanSessionId();
    const layout = layoutOf(root, sessionId);
    const session = newSession({
      sessionId,
      goal: options.goal,
      options: {
        ...(options.maxWorkers !== undefined ? { max_workers: options.maxWorkers } : {}),
        ...(options.maxIterations !== undefined ? { max_iterations: options.maxIterations } : {}),
        skip_verify: options.skipVerify ?? false,
        plan_only: options.planOnly ?? false,
        auto_mode: options.auto ?? false,
      },
    });
    // The integration branch starts at the project's HEAD now.
    const head = (await git(root, ["rev-parse", "HEAD"])).trim();
    await gitOrFail(root, ["branch", planBranch(sessionId), head], `create the plan's integration branch ${planBranch(sessionId)}`);
    // The branch the project was on: where `pu plan merge` brings the plan's work when it is done.
    const baseBranch = await currentBranch(root);
    session.evidence_log.push(
      logEntry("session_started", {
        status: "EXPLORATION",
        summary: `goal: ${options.goal.slice(0, 200)}; integration branch ${planBranch(sessionId)} at ${head.slice(0, 12)}${baseBranch ? ` (from ${baseBranch})` : ""}`,
        ...(baseBranch ? { [PLAN_BASE_BRANCH_FIELD]: baseBranch } : {}),
      }),
    );
    await createPlan(root, layout, { session, context: newContext(), tasks: [] });
    this.driver(root, sessionId).kick();
    return this.summary(root, sessionId);
  }

  async summary(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    const { session, tasks } = await readPlan(layout);
    const driver = this.drivers.get(`${root}\0${sessionId}`);
    return {
      sessionId,
      goal: session.goal,
      phase: session.phase,
      explorationStage: session.exploration_stage,
      iteration: session.iteration,
      approvedAt: session.plan.approved_at,
      options: session.options,
      dir: layout.dir,
      branch: planBranch(sessionId),
      failure: session.phase === "FAILED" ? (session.evidence_log.findLast((e) => e.type === "phase" && e.status === "FAILED")?.summary ?? null) : null,
      problems: taskGraphErrors(tasks),
      tasks: tasks.map((t) => {
        const worker = driver?.workerFor(t.id);
        return { id: t.id, subject: t.subject, status: t.status, blockedBy: t.blockedBy, ...(worker ? { worker: worker.launched.agentId } : {}) };
      }),
    };
  }

  async list(root: string): Promise<{ plans: PlanSummary[]; unreadable: UnreadablePlan[] }> {
    const plans: PlanSummary[] = [];
    const unreadable: UnreadablePlan[] = [];
    for (const id of await listPlanIds(root)) {
      try {
        plans.push(await this.summary(root, id));
      } catch (error) {
        this.state.log.event("plan_unreadable", { projectRoot: root, sessionId: id, error });
        const layout = layoutOf(root, id);
        const message = (error as Error).message;
        // The error names the file that failed (`FILE: what is wrong`); session.json is the one read first.
        const file = [layout.session, layout.context].find((f) => message.includes(f)) ?? message.match(/\/\S+\.json/)?.[0] ?? layout.session;
        unreadable.push({ sessionId: id, file, reason: message.startsWith(`${file}: `) ? message.slice(file.length + 2) : message });
      }
    }
    return { plans, unreadable };
  }

  async approve(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    await updatePlan(layout, (files) => {
      if (files.session.phase !== "PLANNING") throw new PuError("INVALID_STATE", `plan ${sessionId} is in ${files.session.phase}, not waiting for approval`);
      if (files.tasks.length === 0) throw new PuError("INVALID_STATE", `plan ${sessionId} has no accepted tasks yet (the planner is still at work)`);
      if (files.session.plan.approved_at !== null) return;
      files.session.plan.approved_at = new Date().toISOString();
      files.session.evidence_log.push(logEntry("plan_approved", { status: "passed", summary: "approved by pu plan approve" }));
    });
    this.driver(root, sessionId).kick();
    return this.summary(root, sessionId);
  }

  /** Continues a `--plan-only` session (approving it if it was not). */
  async run(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    await updatePlan(layout, (files) => {
      if (FINAL_PHASES.includes(files.session.phase)) throw new PuError("INVALID_STATE", `plan ${sessionId} is ${files.session.phase}`);
      files.session.options.plan_only = false;
      if (files.tasks.length > 0 && files.session.plan.approved_at === null) {
        files.session.plan.approved_at = new Date().toISOString();
        files.session.evidence_log.push(logEntry("plan_approved", { status: "passed", summary: "approved by pu plan run" }));
      }
    });
    this.driver(root, sessionId).kick();
    return this.summary(root, sessionId);
  }

  async cancel(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    const { session } = await readPlan(layout);
    if (FINAL_PHASES.includes(session.phase)) throw new PuError("INVALID_STATE", `plan ${sessionId} is already ${session.phase}`);
    await this.driver(root, sessionId).stop();
    // Role agents of this session a restarted daemon does not know as its own: by name.
    const m = await this.state.store.read(root);
    const prefix = `plan-${sessionId}-`;
    // Root role agents carry the name; a worker's worktree does.
    const named = [
      ...Object.values(m.agents).filter((a) => a.name.startsWith(prefix)),
      ...Object.values(m.worktrees)
        .filter((w) => w.name.startsWith(prefix))
        .flatMap((w) => Object.values(w.agents)),
    ].map((a) => a.id);
    await stopRoleAgents(this.state, named);
    await updatePlan(layout, (files) => {
      // A task whose worker was just stopped is not in progress any more: failed is the seed's word for "could not complete".
      for (const task of files.tasks) {
        if (task.status !== "in_progress") continue;
        task.status = "failed";
        files.session.evidence_log.push(logEntry("task_failed", { task_id: task.id, status: "failed", summary: "cancelled by pu plan cancel while its worker ran" }));
      }
      files.session.phase = "CANCELLED";
      files.session.cancelled_at = new Date().toISOString();
      files.session.evidence_log.push(logEntry("phase", { status: "CANCELLED", summary: "cancelled by pu plan cancel; worktrees kept" }));
    });
    this.state.events.emit("plan_phase", { projectRoot: root, sessionId, phase: "CANCELLED" });
    return this.summary(root, sessionId);
  }

  async evidence(root: string, sessionId: string): Promise<{ sessionId: string; evidenceLog: EvidenceLogEntry[]; tasks: { id: string; evidence: string[] }[] }> {
    const { session, tasks } = await readPlan(layoutOf(root, sessionId));
    return { sessionId, evidenceLog: session.evidence_log, tasks: tasks.map((t) => ({ id: t.id, evidence: t.evidence })) };
  }

  /** `pu plan check CMD` from a worker: run in its worktree, recorded as its task's evidence. */
  async check(agentId: string, command: string): Promise<{ sessionId: string; taskId: string; exitCode: number; output: string; durationMs: number }> {
    for (const driver of this.drivers.values()) {
      const worker = driver.workerOf(agentId);
      if (!worker) continue;
      const config = (await loadConfig(driver.root)).plan;
      const ran = await driver.runCheck(worker, command, config.checkTimeoutSeconds);
      return { sessionId: driver.layout.sessionId, taskId: worker.taskId, ...ran };
    }
    throw new PuError("NOT_FOUND", `${agentId} is not a worker of a running plan session (pu plan check runs only from a plan worker, which has PU_AGENT_ID)`);
  }

  /** At daemon start: every unfinished session of every known project goes on from where it was. */
  async resumeAll(): Promise<void> {
    for (const root of this.state.projects.list()) {
      for (const id of await listPlanIds(root).catch(() => [] as string[])) {
        try {
          const { session } = await readPlan(layoutOf(root, id));
          if (!FINAL_PHASES.includes(session.phase)) this.driver(root, id).kick();
        } catch (error) {
          this.state.log.event("plan_unreadable", { projectRoot: root, sessionId: id, error });
        }
      }
    }
  }

  /** Daemon shutdown: drivers stop where they are (their agents are suspended with the rest). */
  dispose(): void {
    for (const driver of this.drivers.values()) driver.stopped = true;
  }
}
