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
import { readFile } from "node:fs/promises";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { planSettingsTrustItem } from "@pu/core/trust";
import { PLAN_ROLES } from "@pu/core/plan-roles";
import { loadConfig } from "@pu/core/config";
import {
  FINAL_PHASES,
  newContext,
  newSession,
  type EvidenceLogEntry,
  type Phase,
  type SessionOptions,
} from "@pu/core/plan-files";
import { newPlanSessionId, planBranch } from "@pu/core/plan-layout";
import { taskGraphErrors } from "@pu/core/task-graph";
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { parsePlaces } from "@pu/core/placement";
import type { HostMembers } from "../../hosts/host-members.js";
import { requireAgentProgram } from "../../agents/launcher.js";
import { currentBranch, git, gitOrFail } from "../../git/runner.js";
import type { EngineState } from "../../state.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { WorkOwner } from "../../agents/owners.js";
import type { PlanMergeResult } from "@pu/ipc/protocol";
import { PLAN_BASE_BRANCH_FIELD, mergePlan, type PlanMergeOptions } from "./plan-merge.js";
import { createPlan, layoutOf, listPlanIds, readPlan, readSession, readTasks, tasksAccepted, unreadableFile, updatePlan, type UnreadableFile } from "./plan-store.js";
import { workerPlaces } from "./plan-host-workers.js";
import { planTemplateTrustItems, stopRoleAgents } from "./role-agent.js";
import { PlanDriver } from "./plan-driver.js";
import { logEntry, type PlanBudgets } from "./plan-phases.js";

export interface PlanStartOptions {
  goal: string;
  maxWorkers?: number;
  maxIterations?: number;
  skipVerify?: boolean;
  planOnly?: boolean;
  auto?: boolean;
  maxCost?: number;
  maxTokens?: number;
  /** Where workers run: `local` and hosts' names (explorers, planner and verifier run here). */
  on?: string[];
}
/** A design longer than this is cut in replies (a reply frame stays small). */
const MAX_DESIGN_CHARS = 200_000;

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
    private readonly budgets: PlanBudgets,
    /** Workers placed on hosts run there through this; absent: plans run on this machine only. */
    private readonly hostMembers?: HostMembers,
  ) {}

  private driver(root: string, sessionId: string): PlanDriver {
    const key = `${root}\0${sessionId}`;
    let driver = this.drivers.get(key);
    if (!driver) {
      driver = new PlanDriver(this.slots, this.budgets, this.state, root, layoutOf(root, sessionId), this.hostMembers);
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
    const places = options.on === undefined ? undefined : parsePlaces(options.on, "--on");
    for (const host of (places ?? []).filter((place) => place !== LOCAL_PLACE)) {
      if (!this.hostMembers) throw new PuError("INVALID_STATE", `this daemon places no workers on hosts (--on ${host})`);
      await this.hostMembers.requireHost(host);
    }
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
        ...(options.maxCost !== undefined ? { max_cost: options.maxCost } : {}),
        ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
        ...(places !== undefined ? { on: places } : {}),
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

  /**
   * A session whose file pu cannot read, as one line: the file, what is wrong, that pu keeps it
   * as it is, and what its agents and driver do meanwhile. `doing`: what was refused.
   */
  private unreadableError(root: string, sessionId: string, bad: UnreadableFile, doing?: string): PuError {
    const driver = this.drivers.get(`${root}\0${sessionId}`);
    const agents = driver && !driver.stopped ? driver.ownedWork().agentIds.length : 0;
    const then = doing === "is not cancelled"
      ? `fix or restore the file, then run \`pu plan cancel ${sessionId}\` again`
      : driver?.driving ? "the session waits for the file to be fixed or restored, then goes on" : "fix or restore the file";
    return new PuError(
      "INVALID_STATE",
      `plan ${sessionId}${doing ? ` ${doing}` : ""}: ${bad.file} cannot be read: ${bad.reason}; pu keeps the file as it is, never writing over it${agents > 0 ? `; its ${agents} agent(s) keep running` : ""}; ${then}`,
      { details: { file: bad.file, reason: bad.reason } },
    );
  }

  /** `read`, with a session file pu cannot read said as `unreadableError`. */
  private async readOrSay<T>(root: string, sessionId: string, read: () => Promise<T>, doing?: string): Promise<T> {
    try {
      return await read();
    } catch (error) {
      const bad = unreadableFile(error);
      throw bad ? this.unreadableError(root, sessionId, bad, doing) : error;
    }
  }

  async summary(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    const { session, tasks } = await this.readOrSay(root, sessionId, () => readPlan(layout));
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
        const agentId = driver?.workerFor(t.id)?.launched.agentId ?? driver?.hostWorkerFor(t.id)?.agentId ?? undefined;
        const host = t.placement?.host;
        return { id: t.id, subject: t.subject, status: t.status, blockedBy: t.blockedBy, ...(agentId ? { worker: agentId } : {}), ...(host ? { host } : {}) };
      }),
    };
  }

  /** `pu plan merge`: a COMPLETE session's integration branch into the branch it started from (or `into`). */
  merge(root: string, sessionId: string, options: PlanMergeOptions): Promise<PlanMergeResult> {
    return mergePlan(this.state, root, sessionId, options);
  }

  /** The planner's design.md (what a person reads before approving), or null before it is written. */
  async design(root: string, sessionId: string): Promise<string | null> {
    try {
      const text = await readFile(path.join(layoutOf(root, sessionId).dir, "design.md"), "utf8");
      return text.length > MAX_DESIGN_CHARS ? `${text.slice(0, MAX_DESIGN_CHARS)}\n… (cut at ${MAX_DESIGN_CHARS} characters; the whole file is design.md)` : text;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async list(root: string): Promise<{ plans: PlanSummary[]; unreadable: UnreadablePlan[] }> {
    const plans: PlanSummary[] = [];
    const unreadable: UnreadablePlan[] = [];
    for (const id of await listPlanIds(root)) {
      try {
        plans.push(await this.summary(root, id));
      } catch (error) {
        this.state.log.event("plan_unreadable", { projectRoot: root, sessionId: id, error });
        const bad = unreadableFile(error);
        if (bad) {
          unreadable.push({ sessionId: id, ...bad });
          continue;
        }
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
    // A plan that does not exist is not found (exit 3), not a lock that cannot be made in its folder.
    await this.readOrSay(root, sessionId, () => readPlan(layout), "is not approved");
    await updatePlan(layout, (files) => {
      if (files.session.phase !== "PLANNING") throw new PuError("INVALID_STATE", `plan ${sessionId} is in ${files.session.phase}, not waiting for approval`);
      if (!tasksAccepted(files)) throw new PuError("INVALID_STATE", `plan ${sessionId} has no accepted tasks yet (the planner is still at work)`);
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
    await this.readOrSay(root, sessionId, () => readPlan(layout), "does not run");
    await updatePlan(layout, (files) => {
      if (FINAL_PHASES.includes(files.session.phase)) throw new PuError("INVALID_STATE", `plan ${sessionId} is ${files.session.phase}`);
      files.session.options.plan_only = false;
      if (tasksAccepted(files) && files.session.plan.approved_at === null) {
        files.session.plan.approved_at = new Date().toISOString();
        files.session.evidence_log.push(logEntry("plan_approved", { status: "passed", summary: "approved by pu plan run" }));
      }
    });
    this.driver(root, sessionId).kick();
    return this.summary(root, sessionId);
  }

  /**
   * Stops the session's agents and records it CANCELLED. A session whose file pu cannot read is
   * refused before anything is stopped (CANCELLED could not be written, and pu never writes over
   * the file): its agents keep running until the file is fixed or restored and cancel is asked again.
   */
  async cancel(root: string, sessionId: string): Promise<PlanSummary> {
    const layout = layoutOf(root, sessionId);
    const { session } = await this.readOrSay(root, sessionId, () => readPlan(layout), "is not cancelled");
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
    await this.cancelHostWorkers(root, sessionId);
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
    const { session, tasks } = await this.readOrSay(root, sessionId, () => readPlan(layoutOf(root, sessionId)));
    return { sessionId, evidenceLog: session.evidence_log, tasks: tasks.map((t) => ({ id: t.id, evidence: t.evidence })) };
  }

  /** The session's workers placed on hosts that have an agent there (their usage counts toward the plan's budget). */
  async hostAgents(root: string, sessionId: string): Promise<{ host: string; agentId: string }[]> {
    // Asked on every usage change while the plan has a budget: the task files are read only for a session spread over places.
    const layout = layoutOf(root, sessionId);
    if (!workerPlaces(await readSession(layout))) return [];
    const tasks = await readTasks(layout);
    return tasks.flatMap((t) => (t.placement?.agent_id ? [{ host: t.placement.host, agentId: t.placement.agent_id }] : []));
  }

  /** Workers of a cancelled session that run on hosts: their groups there cancelled (a host that does not answer is logged). */
  private async cancelHostWorkers(root: string, sessionId: string): Promise<void> {
    const { tasks } = await readPlan(layoutOf(root, sessionId));
    for (const task of tasks) {
      const placement = task.placement;
      if (task.status !== "in_progress" || !placement?.group_id || !this.hostMembers) continue;
      await this.hostMembers.cancel(root, placement.host, placement.group_id).catch((error: unknown) => this.state.log.event("plan_host_cancel_failed", { projectRoot: root, sessionId, taskId: task.id, host: placement.host, error }));
    }
  }

  /** `pu plan check CMD` from a worker: run in its worktree, recorded as its task's evidence. */
  async check(agentId: string, command: string): Promise<{ sessionId: string; taskId: string; exitCode: number; output: string; durationMs: number }> {
    for (const driver of this.drivers.values()) {
      const worker = driver.workerOf(agentId);
      if (!worker) continue;
      // Not run while the session's file cannot be read (its evidence could not be recorded): said at once, not held until it is fixed.
      await this.readOrSay(driver.root, driver.layout.sessionId, () => readPlan(driver.layout), "runs no check");
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
          // Its driver waits for the file to be fixed or restored, then goes on from what it says (a finished session stays as it is).
          if (unreadableFile(error)) this.driver(root, id).kick();
        }
      }
    }
  }

  /** Daemon shutdown: drivers stop where they are (their agents are suspended with the rest). */
  dispose(): void {
    for (const driver of this.drivers.values()) driver.stopped = true;
  }
}
