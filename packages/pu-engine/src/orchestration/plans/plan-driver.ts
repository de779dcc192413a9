/**
 * One plan session's driver: PlanPhases' loop, with execution (workers on ready tasks in their
 * own worktrees, checks the daemon runs itself, pu's commit and the merge into the plan's
 * branch) and verification (the verifier's verdict, the iteration limit).
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { type PlanConfig } from "@pu/core/config";
import {
  checkEvidence,
  parseVerifierVerdict,
  type Task,
} from "@pu/core/plan-files";
import { VERIFY_TASK_ID, planBranch } from "@pu/core/plan-layout";
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { applyVerdict, executionState, pickTasksToStart, stuckReason, taskGraphErrors } from "@pu/core/task-graph";
import type { LaunchedAgent } from "../../agents/launcher.js";
import { markFinished } from "../../agents/stop.js";
import type { TurnResult } from "../../agents/turn.js";
import { commitAllChanges } from "../../git/commit.js";
import { mergeWorktree, MergeConflictError } from "../../git/merge.js";
import { runGate } from "../../gates/gates.js";
import { roleAgentName, rolePrompt, stopRoleAgents, turnSucceeded, workerPrompt } from "./role-agent.js";
import { worktreesDir } from "@pu/core/paths";
import { tail, logEntry, planLimit, Stopped, type RunningWorker } from "./plan-phases.js";
import { PlanHostWorkers, workerPlaces } from "./plan-host-workers.js";

export class PlanDriver extends PlanHostWorkers {
  // ---- execution ----------------------------------------------------------------

  protected async execute(): Promise<"done" | "stuck"> {
    const inFlight = new Map<string, Promise<void>>();
    const slots = this.slots;
    // tasks/ edited by hand since planning (a cycle, a blockedBy naming no task): no worker could ever finish the graph.
    const graph = taskGraphErrors((await this.read()).tasks);
    if (graph.length > 0) {
      await this.finish("FAILED", `the task graph cannot run: ${graph.join("; ")}`);
      return "stuck";
    }
    // Tasks a dead daemon left in progress: a new worker in the task's worktree, re-prompted.
    // One on a host is followed there again (asked with its placement's key, the host answers with the worker it runs).
    for (const task of (await this.read()).tasks) {
      if (task.status === "in_progress" && task.id !== VERIFY_TASK_ID && !this.workers.has(task.id) && !this.hostWorkers.has(task.id)) {
        const host = task.placement?.host;
        const release = host ? slots.takeAt(this.root, this.placedGroupId, host) : slots.take(this.root);
        inFlight.set(task.id, (host ? this.runHostWorker(task.id) : this.runWorker(task)).finally(release));
      }
    }
    for (;;) {
      this.check();
      const { session, tasks } = await this.read();
      const status = executionState(tasks);
      if (status.kind === "done" && inFlight.size === 0) return "done";
      // A spent budget starts no further worker; the plan fails once the running ones settle (for
      // its budget, though the tasks it left failed make it stuck as well).
      const spent = await this.budgetSpent(planLimit(session.options));
      if (spent !== undefined && inFlight.size === 0) {
        await this.finish("FAILED", `the plan's budget is spent (${spent}): no further worker starts; its worktrees and ${planBranch(this.layout.sessionId)} keep what was done`);
        return "stuck";
      }
      if (status.kind === "stuck" && inFlight.size === 0) {
        await this.finish("FAILED", stuckReason(tasks));
        return "stuck";
      }
      const places = workerPlaces(session);
      if (places) {
        // Spread over places: each ready task waits in the ledger's line for a place with room
        // (`max_workers` counts the waiting as well as the running).
        const ready = pickTasksToStart(tasks, { maxWorkers: 0, freeSlots: spent !== undefined ? 0 : Number.POSITIVE_INFINITY }).filter((t) => !inFlight.has(t.id));
        const room = session.options.max_workers === 0 ? ready.length : Math.max(0, session.options.max_workers - inFlight.size);
        for (const task of ready.slice(0, room)) inFlight.set(task.id, this.placeWorker(task, places));
      } else {
        const free = spent !== undefined || slots.paused() ? 0 : await slots.free(this.root);
        const picks = pickTasksToStart(tasks, { maxWorkers: session.options.max_workers, freeSlots: free }).filter((t) => !inFlight.has(t.id));
        for (const task of picks) {
          // The worker counts against the queue's caps from now until its task settles.
          const release = slots.take(this.root);
          await this.markStarted(task.id, LOCAL_PLACE);
          inFlight.set(task.id, this.runWorker(task).finally(release));
        }
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

  /**
   * A task of a session spread over places: waits in line for a slot at one of them (the place
   * with room holding the fewest of this plan's workers), then its worker runs there.
   */
  protected async placeWorker(task: Task, places: string[]): Promise<void> {
    const request = this.slots.requestPlace(this.root, this.placedGroupId, places);
    const granted = await new Promise<{ release: () => void; place: string } | undefined>((resolve) => {
      const onHalt = () => {
        request.cancel();
        resolve(undefined);
      };
      if (this.halt.signal.aborted) return onHalt();
      this.halt.signal.addEventListener("abort", onHalt, { once: true });
      void request.granted.then((g) => {
        this.halt.signal.removeEventListener("abort", onHalt);
        resolve(g);
      });
    });
    if (!granted) return;
    try {
      await this.markStarted(task.id, granted.place);
      await (granted.place === LOCAL_PLACE ? this.runWorker(task) : this.runHostWorker(task.id));
    } finally {
      granted.release();
    }
  }

  /** One task from start to resolved or failed. Never rejects for the task's own failures. */
  protected async runWorker(task: Task): Promise<void> {
    const { session } = await this.read();
    const config = await this.config();
    const branch = planBranch(session.session_id);
    const name = roleAgentName(session.session_id, { role: "worker", taskId: task.id });
    const m = await this.state.store.read(this.root);
    const oldWorktree = Object.values(m.worktrees).find((w) => w.name === name && w.status === "active");
    const prompt = await workerPrompt(this.state, this.root, this.layout, {
      goal: session.goal,
      task,
      outputFile: this.layout.report(task.id),
      feedback: oldWorktree ? "pu restarted while you worked on this task; your worktree holds what was done so far." : "",
    });
    let launched: LaunchedAgent;
    let result: TurnResult;
    try {
      const role = await this.startRole(
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
        if (await this.failIfBudgetSpent(task.id, launched.agentId)) break;
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
        result = await this.typeTurn(launched, `pu: task ${task.id} is not resolved yet:\n${problems.map((p) => `- ${p}`).join("\n")}\nFix this and end your turn.`);
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
  protected async taskProblems(worker: RunningWorker, config: PlanConfig): Promise<string[]> {
    if (worker.failedChecks.length > 0) return worker.failedChecks.map((c) => `a check failed: ${c}`);
    const cwd = worker.launched.cwd;
    if (config.taskGate) {
      const ran = await this.runCheck(worker, config.taskGate, config.checkTimeoutSeconds, "test_result");
      if (ran.exitCode !== 0) return [`the task gate failed: ${config.taskGate} (exit ${ran.exitCode}):\n${tail(ran.output)}`];
    }
    // pu commits what the worker left, with the task's subject, then merges into the integration branch.
    const { tasks, session } = await this.read();
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

  protected async verify(): Promise<void> {
    const config = await this.config();
    const { session } = await this.read();
    const iteration = session.iteration;
    const verdictFile = this.layout.verdict(iteration);
    const branch = planBranch(session.session_id);
    const prompt = await rolePrompt(this.state, this.root, "verifier", { ITERATION: String(iteration), GOAL: session.goal, PLAN_DIR: this.layout.dir, OUTPUT_FILE: verdictFile, FEEDBACK: "" });
    const commandFailures: { task: string; reason: string }[] = [];
    let verdictProblems: string[] = [];
    const { problems, launched } = await this.roleTurns(
      async () => {
        const role = await this.startRole({ role: "verifier", iteration }, prompt, { kind: "new", name: roleAgentName(session.session_id, { role: "verifier", iteration }), base: branch });
        // The session's from now on (pu clean/kill leave it alone), not only once the commands below ran.
        this.roleAgents.add(role.launched.agentId);
        // The verify commands run on the integration branch (the verifier's checkout) while it starts.
        for (const command of config.verify) {
          const outcome = await runGate({ command, cwd: role.launched.cwd, timeoutSeconds: config.checkTimeoutSeconds });
          const exitCode = outcome.exitCode ?? 124;
          const { entry, line } = checkEvidence({ taskId: VERIFY_TASK_ID, agentId: role.launched.agentId, command, exitCode, durationMs: outcome.durationMs, output: outcome.output, type: "test_result" });
          // The verify task's own evidence too, as a worker's check is its task's: resolved means "completed with evidence".
          await this.update((files) => {
            files.session.evidence_log.push(entry);
            files.tasks.find((t) => t.id === VERIFY_TASK_ID)?.evidence.push(line);
          });
          if (exitCode !== 0) commandFailures.push({ task: VERIFY_TASK_ID, reason: `${command} exited ${exitCode}: ${tail(outcome.output, 300)}` });
        }
        return role;
      },
      async () => {
        try {
          const { tasks } = await this.read();
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
    const fresh = await this.read();
    const given = parseVerifierVerdict(await fs.readFile(verdictFile, "utf8"), verdictFile);
    // A verify command that failed fails the verdict, whatever the verifier wrote.
    const verdict = commandFailures.length > 0 ? { ...given, passed: false, failures: [...given.failures, ...commandFailures] } : given;
    const outcome = applyVerdict(fresh.session, fresh.tasks, verdict);
    await this.update((files) => {
      files.tasks = outcome.tasks;
      // The verdict is the verify task's evidence as well (with no plan.verify commands, its only evidence).
      files.tasks
        .find((t) => t.id === VERIFY_TASK_ID)
        ?.evidence.push(`${verdict.passed ? "passed" : "FAILED"}: the verifier's verdict for iteration ${iteration} (${path.relative(this.layout.dir, verdictFile)})${verdict.passed ? "" : `: ${verdict.failures.map((f) => `${f.task}: ${f.reason}`).join("; ")}`}`);
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
