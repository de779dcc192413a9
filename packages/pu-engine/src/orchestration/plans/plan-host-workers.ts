/**
 * A plan's workers placed on hosts (`pu plan start --on local,gpu-box`). The host's daemon runs
 * a worker as a group of one member there (host-members.ts): its own slot, readiness, the plan's
 * task gate with fix turns, and pu's commit — the same path a group's member on a host takes.
 * This daemon records where the worker went before asking, follows it until it ends, records the
 * host's gate runs as the task's evidence, and merges the worker's branch (fetched back) into the
 * plan's branch here. Explorers, the planner and the verifier run on this machine, beside the
 * plan's files.
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { checkEvidence, type Session, type Task } from "@pu/core/plan-files";
import { planBranch } from "@pu/core/plan-layout";
import { textTail } from "@pu/core/prompt-text";
import { planSettingsTrustItem } from "@pu/core/trust";
import type { GroupMemberView, GroupView } from "@pu/ipc/protocol";
import { MergeConflictError } from "../../git/merge.js";
import { hostMemberResult } from "../../hosts/host-members.js";
import { workerPrompt } from "./role-agent.js";
import { logEntry, planLimit, PlanPhases } from "./plan-phases.js";

/** The design typed into a host worker's prompt is cut to its last this many characters. */
const DESIGN_IN_PROMPT_CHARS = 24_000;

/** The places a session's workers spread over, or undefined when they all run here. */
export function workerPlaces(session: Session): string[] | undefined {
  const on = session.options.on;
  return on && on.some((place) => place !== LOCAL_PLACE) ? on : undefined;
}

export abstract class PlanHostWorkers extends PlanPhases {
  /** The id the host's groups of this plan's workers are placed under (one member each, keyed by placement). */
  protected get placedGroupId(): string {
    return `plan-${this.layout.sessionId}`;
  }

  /** Marks the task in progress on `place` (a new placement key on a host; none here) before its worker starts. */
  protected async markStarted(taskId: string, place: string): Promise<void> {
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t) {
        t.status = "in_progress";
        if (place === LOCAL_PLACE) delete t.placement;
        else t.placement = { host: place, key: `${taskId}-${randomBytes(4).toString("hex")}`, group_id: null };
      }
      files.session.evidence_log.push(logEntry("task_started", { task_id: taskId, status: "in_progress", summary: `worker started on ${taskId}${place === LOCAL_PLACE ? "" : ` on host ${place}`}` }));
    });
  }

  /**
   * One task's worker on its host, from the placement recorded in the task: made there (or, after
   * a restart, found again: the host answers the same key with the group it made), followed until
   * it ends, then settled here. Never rejects for the task's own failures; while this daemon stops,
   * the worker goes on on its host and the next daemon follows it again.
   */
  protected async runHostWorker(taskId: string): Promise<void> {
    const { session, tasks } = await this.read();
    const task = tasks.find((t) => t.id === taskId);
    const placement = task?.placement;
    if (!task || !placement) return;
    const worker = { taskId, host: placement.host, agentId: placement.agent_id ?? null, worktreeId: placement.worktree_id ?? null };
    this.hostWorkers.set(taskId, worker);
    const branch = planBranch(session.session_id);
    try {
      const hosts = this.hostMembers;
      if (!hosts) throw new PuError("INVALID_STATE", "this daemon places no workers on hosts");
      let groupId = placement.group_id;
      if (!groupId) {
        const config = await loadConfig(this.root);
        // The worker's agent type and the task gate come from the project's plan settings, as a local worker's do.
        await this.state.trust.require(this.root, [planSettingsTrustItem(this.root, config.plan)]);
        const made = await hosts.start(
          this.root,
          placement.host,
          {
            groupId: this.placedGroupId,
            variant: placement.key,
            kind: "multi_model",
            delegator: config.plan.agents.worker ?? config.defaultAgent,
            prompt: await this.hostWorkerPrompt(session, task, placement.host),
            baseBranch: branch,
            // The worker's part of the role contract that holds on a host (the plan's files stay here).
            env: { PU_PLAN_ROLE: "worker", PU_TASK_ID: task.id },
            settings: {
              gate: config.plan.taskGate ? { run: config.plan.taskGate, timeout_seconds: config.plan.checkTimeoutSeconds, expect_exit: 0 } : null,
              max_retries: config.plan.retries,
              timeout_minutes: null,
              // The plan's budget holds the worker on its host (its daemon enforces it there).
              max_cost: session.options.max_cost ?? null,
              max_tokens: session.options.max_tokens ?? null,
            },
          },
          this.halt.signal,
        );
        groupId = made;
        await this.update((files) => {
          const t = files.tasks.find((x) => x.id === taskId);
          if (t?.placement?.key === placement.key) t.placement.group_id = made;
        });
      }
      const limit = planLimit(session.options);
      const view = await hosts.follow(this.root, placement.host, groupId, branch, {
        signal: this.halt.signal,
        over: () => this.stopped || this.state.stopping,
        seen: (member) => this.recordHostIds(taskId, placement.key, worker, member),
        // The host holds the worker to the plan's whole budget on its own figures; spent with the plan's other agents', it is held here.
        ...(limit ? { spent: () => this.budgetSpent(limit), owner: `plan:${this.layout.sessionId}` } : {}),
      });
      if (!view || this.stopped || this.state.stopping) return;
      await this.settleHostWorker(task, placement.host, view);
    } catch (error) {
      if (this.stopped || this.state.stopping) return;
      await this.failTask(taskId, `its worker could not run on host ${placement.host}: ${(error as Error).message}`).catch(() => undefined);
    } finally {
      this.hostWorkers.delete(taskId);
    }
  }

  /** The worker's agent and worktree on the host, kept in the task (so status and a restarted daemon know them). */
  private async recordHostIds(taskId: string, key: string, worker: { agentId: string | null; worktreeId: string | null }, member: GroupMemberView): Promise<void> {
    if (member.agentId === worker.agentId && member.worktreeId === worker.worktreeId) return;
    worker.agentId = member.agentId;
    worker.worktreeId = member.worktreeId;
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t?.placement?.key !== key) return;
      t.placement.agent_id = member.agentId;
      t.placement.worktree_id = member.worktreeId;
    });
  }

  /** The worker ended on its host: its gate runs become the task's evidence, its note the task's report, its branch merged into the plan's. */
  private async settleHostWorker(task: Task, host: string, view: GroupView): Promise<void> {
    const hosts = this.hostMembers;
    if (!hosts) return;
    const result = hostMemberResult(view);
    const member = view.members[0];
    if (member?.agentId) {
      const runs = await hosts.gateRuns(this.root, host, member.agentId).catch(() => []);
      for (const run of runs) {
        const { entry, line } = checkEvidence({ taskId: task.id, agentId: member.agentId, command: run.command, exitCode: run.exitCode ?? 124, durationMs: run.durationMs, output: run.outputTail, type: "test_result" });
        await this.update((files) => {
          files.session.evidence_log.push({ ...entry, summary: `${entry.summary ?? ""} [on host ${host}]` });
          files.tasks.find((t) => t.id === task.id)?.evidence.push(`${line} [on host ${host}]`);
        });
      }
    }
    if (result.output_source === "file" && result.output.trim() !== "") await fs.writeFile(this.layout.report(task.id), `${result.output.trimEnd()}\n`).catch(() => undefined);
    if (result.state !== "done") {
      await this.failTask(task.id, `on host ${host}: ${result.reason ?? `the worker ${result.state}`}`);
      return;
    }
    if (await this.failIfBudgetSpent(task.id)) return;
    const branch = planBranch(this.layout.sessionId);
    if (member?.worktreeId) {
      try {
        await hosts.merge(member.worktreeId, "merge", `Merge task ${task.id}: ${task.subject}`.trim());
      } catch (error) {
        const why = error instanceof MergeConflictError ? `merging its work (from host ${host}) into ${branch} conflicts in ${error.details.conflicts.join(", ")}; its branch ${member.branch ?? ""} is kept here and on the host` : `its work could not be merged into ${branch}: ${(error as Error).message}`;
        await this.failTask(task.id, why);
        return;
      }
    }
    await this.resolveTask(task.id, `resolved on host ${host}${result.gate ? ` after ${result.gate.attempts} turn(s)` : ""}`);
  }

  /**
   * The worker template, as a local worker gets it, with what differs on a host after it: the
   * plan's files stay on this machine (the design is typed in instead), and the task gate pu runs
   * after each turn takes the place of `pu plan check`.
   */
  private async hostWorkerPrompt(session: Session, task: Task, host: string): Promise<string> {
    const config = (await loadConfig(this.root)).plan;
    const design = await fs.readFile(this.layout.design, "utf8").catch(() => "");
    const onHost = [
      `You run on host ${host}, not on the machine that holds the plan: the paths under ${this.layout.dir} named above are not here, and \`pu plan check\` is not available here.`,
      config.taskGate ? `After each of your turns pu runs the task's check \`${config.taskGate}\` in your worktree and records it as evidence; if it fails, pu tells you and you continue.` : "pu records your work when you end your turn.",
      design.trim() ? `The plan's design:\n\n${textTail(design.trim(), DESIGN_IN_PROMPT_CHARS)}` : "",
    ]
      .filter(Boolean)
      .join("\n\n");
    return workerPrompt(this.state, this.root, this.layout, { goal: session.goal, task, outputFile: "$PU_OUTPUT_FILE", feedback: onHost });
  }

  protected async resolveTask(taskId: string, summary: string): Promise<void> {
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t) t.status = "resolved";
      files.session.evidence_log.push(logEntry("task_resolved", { task_id: taskId, status: "resolved", summary }));
    });
  }

  /**
   * A worker's turn that ended once the plan's budget was spent resolves nothing (it may have been
   * cut short, and no fix turn may follow): its task fails saying so, its worktree keeps the work.
   */
  protected async failIfBudgetSpent(taskId: string, agentId?: string): Promise<boolean> {
    const spent = await this.budgetSpentAsTurnEnds(agentId);
    if (spent === undefined) return false;
    await this.failTask(taskId, `not resolved: the plan's budget is spent (${spent}) as its worker's turn ended; its worktree keeps what was done`);
    return true;
  }

  protected async failTask(taskId: string, reason: string): Promise<void> {
    await this.update((files) => {
      const t = files.tasks.find((x) => x.id === taskId);
      if (t) t.status = "failed";
      files.session.evidence_log.push(logEntry("task_failed", { task_id: taskId, status: "failed", summary: reason.slice(0, 2000) }));
    });
  }
}
