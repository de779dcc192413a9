/** The steps of a ticket: each one a turn of its agent (or a group), checked, reviewed, then the ticket finished. */
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { aggregatedText, isGroupFinished } from "@pu/core/group";
import { budgetTokens, lowerLimit } from "@pu/core/usage";
import { MAX_TIMER_MS, setLongTimeout } from "@pu/core/long-timeout";
import { puDir } from "@pu/core/paths";
import { renderTemplate } from "@pu/core/template";
import { stepAgent, type WorkflowStep } from "@pu/core/workflow";
import type { TicketView } from "@pu/ipc/protocol";
import type { LiveAgent } from "../../session/live-agent.js";
import { stopFinishedAgents } from "../../agents/stop.js";
import { startTurn, type TurnResult } from "../../agents/turn.js";
import { nowIso } from "../../state.js";
import { appendGateRun, gateFixRequest, runGate, toGateRun } from "../../gates/gates.js";
import { describeBudget, describeSpent } from "../../usage/usage-figures.js";
import { appendHistory, findTicket } from "./tickets.js";
import { ticketTrust } from "./ticket-trust.js";
import { FIX_OUTPUT_BYTES, NEEDS_DECISION, REVIEW_STATES, exists, resolvesOutside, editedSinceTrusted, trustFileWaitMessage, waitsForTrustFile, type Decision, type TicketRun, type StepOutcome } from "./queue-run.js";
import { QueueEnd } from "./queue-end.js";

export abstract class QueueSteps extends QueueEnd {
  // A step of a ticket placed on a host: QueueHostSteps (queue-host-steps.ts).
  protected abstract runHostStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome>;

  // ---- steps ---------------------------------------------------------------------------

  /**
   * Works the ticket from step `index`. `resumeState` (after a restart): the step was already
   * typed; a pending review or awaiting_input waits for the person instead of re-running.
   */
  protected async drive(run: TicketRun, index: number, options: { awaitingDecision?: boolean } = {}): Promise<void> {
    let i = index;
    let awaiting = options.awaitingDecision ?? false;
    try {
      while (i < run.workflow.steps.length) {
        const step = run.workflow.steps[i] as WorkflowStep;
        // A reviewer's reject asks something of this step: state.json keeps it until the step is
        // done, so the step run again after a restart is told too.
        const extra = this.agentStateOf(run)?.rework_request ?? undefined;
        let outcome: StepOutcome;
        if (awaiting) {
          awaiting = false;
          // Waiting on an unreadable trust.json, the step itself never ran: approved, it runs now.
          const notStarted = waitsForTrustFile(this.agentStateOf(run));
          outcome = await this.waitForPerson(run, step, undefined, undefined);
          if (notStarted && outcome.kind === "done") continue;
        } else if (step.type !== undefined) {
          outcome = await this.runGroupStep(run, step, extra);
        } else if (this.agentStateOf(run)?.host) {
          outcome = await this.runHostStep(run, step, extra);
        } else {
          await this.ensureStepAgent(run, step);
          outcome = await this.runStep(run, step, extra);
        }
        if (outcome.kind === "stopped") return;
        if (outcome.kind === "failed") return await this.fail(run, outcome.message);
        if (outcome.kind === "reject") {
          i = await this.sendBack(run, i, outcome);
          continue;
        }
        await this.store.update(() => {
          const a = this.agentStateOf(run);
          if (!a) return;
          a.completed_steps = [...new Set([...(a.completed_steps ?? []), step.name])];
          // What the reject asked of this step is answered: the steps after it are not told.
          delete a.rework_request;
        });
        await appendHistory(run.root, run.ticketId, { event: "step done", step: step.name, ...(outcome.note ? { note: outcome.note } : {}) });
        i++;
      }
      await this.complete(run);
    } catch (err) {
      if (this.stopped || run.abort.signal.aborted) return;
      await this.fail(run, (err as Error).message).catch((e: unknown) => this.state.log.event("ticket_fail_record_failed", { error: e }));
    }
  }

  /**
   * A reject at step `from`: the steps from the one it sends the ticket back to (that step, or
   * `from` itself) run again, so they are no longer done — a restart goes on from the current step
   * when it is not done (restartIndex), and it is this one now — and what the reviewer asked is
   * kept for that step (rework_request), all in one write. Returns the step's index.
   */
  protected async sendBack(run: TicketRun, from: number, reject: { reason: string; step?: string }): Promise<number> {
    const target = reject.step === undefined ? from : run.workflow.steps.findIndex((s) => s.name === reject.step);
    const i = target < 0 ? from : target;
    const again = new Set(run.workflow.steps.slice(i).map((s) => s.name));
    const current = (run.workflow.steps[i] as WorkflowStep).name;
    const request = `Review: changes requested${reject.step ? ` (back to step "${reject.step}")` : ""}: ${reject.reason}`;
    await this.store.update(() => {
      const a = this.agentStateOf(run);
      if (!a) return;
      a.completed_steps = (a.completed_steps ?? []).filter((name) => !again.has(name));
      a.current_step = current;
      a.rework_request = request;
    });
    return i;
  }

  /** The step names an agent type other than the current one (or the agent is gone): a new agent in the ticket's worktree. */
  protected async ensureStepAgent(run: TicketRun, step: WorkflowStep): Promise<void> {
    const agentState = this.agentStateOf(run);
    if (!agentState) throw new PuError("INVALID_STATE", `ticket ${run.ticketId} has no state`);
    const config = await loadConfig(run.root);
    const stats = this.store.state.project_llm_stats?.[run.root];
    const ticket = await findTicket(run.root, run.ticketId);
    const tool = stepAgent(step, ticket, stats?.preferred_tool, config.defaultAgent);
    const model = step.model ?? ticket.model ?? agentState.llm_model ?? null;
    const live = run.live;
    const alive = live !== undefined && live.session.exitCode === null;
    if (alive && live.agentType === tool && (step.model === undefined || step.model === agentState.llm_model)) return;
    if (alive) {
      await stopFinishedAgents([live], "queue");
    }
    const worktree = agentState.session_context_ref;
    if (!worktree) throw new PuError("INVALID_STATE", `ticket ${run.ticketId} has no worktree to start step ${step.name} in`);
    await this.launchFor(run, agentState, tool, model, { kind: "worktree", worktree });
  }

  protected async runStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome> {
    const live = run.live;
    if (!live) return { kind: "failed", message: `no agent for step ${step.name}` };
    // Each step types the ticket's text again: a hand edit since it was trusted must not reach the agent.
    const trusted = await this.trustedTicket(run, step);
    if ("outcome" in trusted) return trusted.outcome;
    const ticket = trusted.ticket;
    await this.markStepStarted(run, step, live.agentId);
    const vars = await this.stepVars(run, ticket, step);
    const prompt = renderTemplate(step.prompt, vars).text.trimEnd();
    let text = extra ? `${extra}\n\n${prompt}` : prompt;
    await this.budgets.limitStep(run.root, live.agentId, { ticket: { maxCost: ticket.max_cost, maxTokens: ticket.max_tokens }, step: { maxCost: step.max_cost, maxTokens: step.max_tokens } });
    for (let attempt = 0; ; attempt++) {
      const answered = await this.stepTurn(run, live, step, text);
      if (answered === "stopped") return { kind: "stopped" };
      if (answered !== "waiting") return { kind: "failed", message: answered };
      // pu interrupted the turn at the ticket's or the step's budget: a person decides (approve goes on).
      const over = this.budgets.overBudget(live.agentId);
      if (over) return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: stopped at its budget (${over})`);
      const problem = await this.checkStep(run, live, step, attempt);
      if (problem === undefined) break;
      if (attempt < step.max_retries) {
        text = problem;
        continue;
      }
      // Out of retries: a person decides (approve goes on, reject repeats the step).
      return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: ${problem.split("\n")[0] ?? ""} (after ${attempt + 1} attempts)`);
    }
    if (step.review) return this.waitForPerson(run, step, REVIEW_STATES[step.review], `step ${step.name} waits for a ${step.review} review`);
    return { kind: "done" };
  }

  /**
   * The ticket, read fresh, when it is still the one that was trusted; else how the step ends: failed
   * when it was edited by hand since. While trust.json cannot be read nothing can tell, so the ticket
   * waits for a person (its agent kept) and is checked again once they approve.
   */
  protected async trustedTicket(run: TicketRun, step: WorkflowStep): Promise<{ ticket: TicketView } | { outcome: StepOutcome }> {
    for (;;) {
      const ticket = await findTicket(run.root, run.ticketId);
      const trust = await ticketTrust(this.state, run.root, ticket);
      if (trust === "trusted") return { ticket };
      if (trust === "edited") return { outcome: editedSinceTrusted(run.ticketId) };
      // The step it waits before: what `pu review` names, and what a restart runs once approved.
      await this.store.update(() => {
        const a = this.agentStateOf(run);
        if (a) a.current_step = step.name;
      });
      const outcome = await this.waitForPerson(run, step, null, trustFileWaitMessage(run.ticketId, step.name, trust.unreadable));
      if (outcome.kind !== "done") return { outcome };
    }
  }

  protected async markStepStarted(run: TicketRun, step: WorkflowStep, agentId: string | undefined): Promise<void> {
    await this.store.update(() => {
      const a = this.agentStateOf(run);
      if (!a) return;
      a.current_step = step.name;
      a.step_started_at = nowIso();
      a.status = "running";
      a.review_state = null;
      a.last_message = null;
      a.last_activity = nowIso();
    });
    this.state.log.event("ticket_step", { projectRoot: run.root, ticketId: run.ticketId, step: step.name, agentId });
    this.state.events.emit("ticket_changed", { projectRoot: run.root, ticketId: run.ticketId, kind: "step_started", step: step.name, ...(agentId !== undefined ? { agentId } : {}) });
  }

  /** A step prompt's variables: the ticket's own, and the last group step's aggregated output. */
  protected async stepVars(run: TicketRun, ticket: TicketView, step: WorkflowStep): Promise<Record<string, string>> {
    const groupOutput = await readFile(this.groupOutputFile(run.root, run.ticketId), "utf8").catch(() => "");
    return {
      ...ticket.vars,
      TICKET_ID: ticket.id,
      TITLE: ticket.title,
      DESCRIPTION: ticket.description.trimEnd(),
      STEP: step.name,
      OUTPUT_FILE: this.outputFile(run.root, run.ticketId),
      GROUP_OUTPUT: groupOutput.trimEnd(),
    };
  }

  protected groupOutputFile(root: string, ticketId: string): string {
    return path.join(puDir(root), "tickets", "output", `${ticketId}.group.md`);
  }

  /**
   * A group step: the ticket's agent stops (its slot goes to the members), the group runs, and
   * the ticket goes on with the group's aggregated output (GROUP_OUTPUT in the next prompts).
   * A group that fails waits for `pu review approve|reject`, like a gate out of retries.
   */
  protected async runGroupStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome> {
    const groups = this.groups;
    if (step.type === undefined) return { kind: "failed", message: `step ${step.name} is not a group step` };
    const trusted = await this.trustedTicket(run, step);
    if ("outcome" in trusted) return trusted.outcome;
    const ticket = trusted.ticket;
    const agentState = this.agentStateOf(run);
    if (!agentState) return { kind: "failed", message: `ticket ${run.ticketId} has no state` };
    if (step.read_only && agentState.host) return { kind: "failed", message: `step ${step.name}'s members would share the ticket's worktree, which is on host ${agentState.host}: a read_only group step runs only for a ticket on this machine` };
    await this.markStepStarted(run, step, undefined);
    const live = run.live;
    if (live && live.session.exitCode === null) {
      await stopFinishedAgents([live], "queue");
    }
    const giveBack = this.slots.lend(run.root, run.ticketId);
    try {
      let group = groups.openGroupOfStep(run.root, run.ticketId, step.name);
      if (!group) {
        const left = await this.ticketBudgetLeft(run, ticket, agentState.session_name ?? undefined);
        if (left.spent) return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: stopped at its budget (${left.spent})`);
        // Each member has its own output file: {{OUTPUT_FILE}} names it through the member's environment.
        const vars = { ...(await this.stepVars(run, ticket, step)), OUTPUT_FILE: "$PU_OUTPUT_FILE" };
        const config = await loadConfig(run.root);
        const stats = this.store.state.project_llm_stats?.[run.root];
        const single = stepAgent(step, ticket, stats?.preferred_tool, config.defaultAgent);
        const model = step.model ?? ticket.model;
        const shared = renderTemplate(step.prompt, vars).text.trimEnd();
        group = await groups.create({
          root: run.root,
          kind: step.type,
          delegators: step.agents ?? [model ? `${single}:${model}` : single],
          sharedPrompt: extra ? `${extra}\n\n${shared}` : shared,
          prompts: (step.prompts ?? []).map((p) => renderTemplate(p, vars).text.trimEnd()),
          ...(step.aggregate !== undefined ? { aggregate: step.aggregate } : {}),
          ...(step.join !== undefined ? { join: step.join } : {}),
          ...(step.quorum !== undefined ? { quorum: step.quorum } : {}),
          ...(step.gate !== undefined ? { gate: step.gate, maxRetries: step.max_retries } : {}),
          ...(step.timeout_minutes !== undefined ? { timeoutMinutes: step.timeout_minutes } : {}),
          ...(step.judge !== undefined ? { judge: step.judge } : {}),
          // The step's budget (or what is left of the ticket's, the lower of the two) is the group's, over all its members.
          ...limitField("maxCost", lowerLimit(step.max_cost, left.maxCost)),
          ...limitField("maxTokens", lowerLimit(step.max_tokens, left.maxTokens)),
          ...(step.read_only && agentState.session_context_ref ? { sharedWorktree: agentState.session_context_ref } : {}),
          ...(step.on !== undefined ? { on: step.on } : {}),
          ticketId: run.ticketId,
          stepName: step.name,
        });
        await appendHistory(run.root, run.ticketId, { event: "group started", step: step.name, note: group.group_id });
      }
      const aborted = new Promise<undefined>((resolve) => {
        if (run.abort.signal.aborted) resolve(undefined);
        else run.abort.signal.addEventListener("abort", () => resolve(undefined), { once: true });
      });
      const ended = await Promise.race([groups.ended(group), aborted]);
      if (ended === undefined) {
        // The ticket was cancelled (not the daemon stopping): its group stops too.
        if (!this.stopped && !this.state.stopping && !isGroupFinished(group)) await groups.cancel(run.root, group.group_id).catch(() => undefined);
        return { kind: "stopped" };
      }
      if (ended.phase === "complete") {
        const text = aggregatedText(ended) ?? "";
        const file = this.groupOutputFile(run.root, run.ticketId);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `${text}\n`);
        return { kind: "done", note: `group ${ended.group_id} complete${typeof ended.aggregated_output?.winner === "string" ? `, winner ${ended.aggregated_output.winner}` : ""}` };
      }
      const why = (ended.failure_reasons ?? [])[0] ?? ended.phase;
      return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: group ${ended.group_id} ${ended.phase}: ${why}`);
    } finally {
      giveBack();
    }
  }

  /**
   * What is left of the ticket's budget for a group step or a step on a host: its limits less what
   * the ticket's agents (here and on its host) and its earlier groups' members used (a rejected
   * group's too: it spent). `spent` says why
   * nothing is left; a cost is left alone while a model without a price makes it unknown.
   */
  protected async ticketBudgetLeft(run: TicketRun, ticket: TicketView, currentAgentId: string | undefined): Promise<{ maxCost?: number; maxTokens?: number; spent?: string }> {
    const limit = { ...limitField("maxCost", ticket.max_cost), ...limitField("maxTokens", ticket.max_tokens) };
    if (limit.maxCost === undefined && limit.maxTokens === undefined) return {};
    const used = await this.budgets.ticketTotals(run.root, run.ticketId, currentAgentId, ticketGroupIds(ticket));
    const maxTokens = limit.maxTokens === undefined ? undefined : limit.maxTokens - budgetTokens(used);
    const maxCost = limit.maxCost === undefined || used.costUsd === null ? limit.maxCost : limit.maxCost - used.costUsd;
    if ((maxTokens !== undefined && maxTokens <= 0) || (maxCost !== undefined && maxCost <= 0)) {
      return { spent: `the ticket's ${describeBudget(limit)}, spent ${describeSpent(used)} by its earlier steps` };
    }
    return { ...limitField("maxCost", maxCost), ...limitField("maxTokens", maxTokens) };
  }

  /**
   * One turn for the step. A timeout (or a screen that has not changed for hungAfterMinutes
   * while the agent is busy) marks the ticket awaiting_input once; the turn goes on, nothing is killed.
   */
  protected async stepTurn(run: TicketRun, live: LiveAgent, step: WorkflowStep, text: string): Promise<"waiting" | "stopped" | string> {
    const { hungAfterMinutes } = await this.slots.projectSettings(run.root);
    const started = startTurn(this.state, live, text, { signal: run.abort.signal });
    const watch = this.watchStep(run, step, "");
    let lastOutput = Date.now();
    let hungTimer: NodeJS.Timeout | undefined;
    const hungMs = hungAfterMinutes * 60_000;
    const armHung = () => {
      clearTimeout(hungTimer);
      hungTimer = setTimeout(() => {
        if (Date.now() - lastOutput >= hungMs) watch.flag(`the agent's screen has not changed for ${hungAfterMinutes} min while it is busy (step ${step.name})`);
        else armHung();
      }, Math.min(hungMs, MAX_TIMER_MS));
    };
    // The rendered screen, not raw output: a TUI redrawing the same frame is as stuck as a silent one.
    const offOutput = live.session.screen.onChange(() => {
      lastOutput = Date.now();
    });
    armHung();
    let result: TurnResult;
    try {
      result = await started.done;
    } finally {
      watch.stop();
      clearTimeout(hungTimer);
      offOutput();
    }
    // Cancelled or shutting down: whatever the turn saw (an exit, most likely) is not the agent's doing.
    if (result.outcome === "aborted" || run.abort.signal.aborted || this.stopped || this.state.stopping) return "stopped";
    if (result.outcome === "waiting") {
      await watch.unflag();
      await this.touch(run, live);
      return "waiting";
    }
    return `the agent ${live.agentId} exited (code ${result.exitCode ?? "?"}) during step ${step.name}`;
  }

  /**
   * Watches one run of a step, here or on a host: once its timeout_minutes pass, the ticket is
   * flagged awaiting_input (at most once, whatever flags it); the agent goes on. `stop` ends the
   * watch; `unflag`, when the step's agent finished its turn, puts a flagged ticket back to running.
   */
  protected watchStep(run: TicketRun, step: WorkflowStep, where: string): StepWatch {
    let flagged = false;
    const flag = (message: string): void => {
      if (flagged) return;
      flagged = true;
      void this.markAwaiting(run, null, message).catch(() => undefined);
    };
    const stopTimer =
      step.timeout_minutes !== undefined
        ? setLongTimeout(() => flag(`step ${step.name} timed out after ${step.timeout_minutes} min; the agent is still working${where}`), step.timeout_minutes * 60_000)
        : undefined;
    return {
      flag,
      stop: () => stopTimer?.(),
      unflag: async () => {
        stopTimer?.();
        if (!flagged) return;
        await this.store.update(() => {
          const a = this.agentStateOf(run);
          if (a && a.review_state == null) {
            a.status = "running";
            a.last_message = null;
          }
        });
      },
    };
  }

  /** Records activity and the screen's hash (change detection across restarts). */
  protected async touch(run: TicketRun, live: LiveAgent): Promise<void> {
    const tail = live.session.ring.tail(4096).data;
    const hash = createHash("sha256").update(tail).digest("hex").slice(0, 16);
    await this.store.update(() => {
      const a = this.agentStateOf(run);
      if (!a) return;
      const now = nowIso();
      a.last_activity = now;
      a.paired = live.session.viewerCount > 0;
      if (a.content_hash !== hash) a.last_content_change = now;
      a.content_hash = hash;
    });
  }

  /** The artifact and the gate; a text to type back when something is missing or failing. */
  protected async checkStep(run: TicketRun, live: LiveAgent, step: WorkflowStep, attempt: number): Promise<string | undefined> {
    if (step.artifact !== undefined) {
      const file = path.resolve(live.cwd, step.artifact);
      if (!(await exists(file))) {
        return `The step "${step.name}" is done only when ${step.artifact} exists, and it does not yet. Please create it.`;
      }
      const outside = await resolvesOutside(live.cwd, file);
      if (outside !== undefined) {
        return `The step "${step.name}" is done only when ${step.artifact} is a file in your worktree; it leads to ${outside}, outside it. Please write the file itself there.`;
      }
    }
    if (step.gate === undefined) return undefined;
    const outcome = await runGate({
      command: step.gate.run,
      cwd: live.cwd,
      timeoutSeconds: step.gate.timeout_seconds,
      signal: run.abort.signal,
      env: { PU_AGENT_ID: live.agentId, PU_PROJECT_ROOT: run.root, PU_TICKET_ID: run.ticketId, PU_STEP: step.name, PU_GATE_ATTEMPT: String(attempt + 1) },
    });
    const record = toGateRun(outcome, { agentId: live.agentId, triggerName: `workflow:${run.ticketId}:${step.name}`, seqIndex: 0, expectedExit: step.gate.expect_exit });
    await appendGateRun(run.root, live.agentId, record).catch((err: unknown) => this.state.log.event("gate_record_failed", { error: err }));
    this.state.log.event("ticket_gate", { projectRoot: run.root, ticketId: run.ticketId, step: step.name, passed: record.passed, exitCode: outcome.exitCode });
    if (record.passed) return undefined;
    return gateFixRequest(outcome, step.gate.expect_exit, attempt + 1, step.max_retries + 1, FIX_OUTPUT_BYTES);
  }

  protected async markAwaiting(run: TicketRun, reviewState: string | null, message: string | null): Promise<void> {
    await this.store.update(() => {
      const a = this.agentStateOf(run);
      if (!a) return;
      a.status = "awaiting_input";
      if (reviewState !== null) a.review_state = reviewState;
      if (message !== null) a.last_message = message;
      a.last_activity = nowIso();
    });
    this.state.log.event("ticket_awaiting_input", { projectRoot: run.root, ticketId: run.ticketId, reviewState, message });
    const a = this.agentStateOf(run);
    this.state.events.emit("ticket_changed", {
      projectRoot: run.root,
      ticketId: run.ticketId,
      kind: "awaiting_input",
      ...(a?.current_step ? { step: a.current_step } : {}),
      ...(a?.last_message ? { message: a.last_message } : {}),
    });
  }

  /** The ticket waits for `pu review approve|reject` (persisted, so a restart waits again). */
  protected async waitForPerson(run: TicketRun, step: WorkflowStep, reviewState: string | null | undefined, message: string | undefined): Promise<StepOutcome> {
    // Ready for the decision before anyone can see the ticket waiting for it.
    const decided = new Promise<Decision | undefined>((resolve) => {
      if (run.pending) {
        resolve(run.pending);
        run.pending = undefined;
        return;
      }
      run.decide = resolve;
      const onAbort = () => resolve(undefined);
      if (run.abort.signal.aborted) onAbort();
      else run.abort.signal.addEventListener("abort", onAbort, { once: true });
    });
    if (reviewState !== undefined || message !== undefined) await this.markAwaiting(run, reviewState ?? null, message ?? null);
    const decision = await decided;
    run.decide = undefined;
    if (decision === undefined) return { kind: "stopped" };
    await this.store.update(() => {
      const a = this.agentStateOf(run);
      if (!a) return;
      a.status = "running";
      a.review_state = null;
      a.last_message = null;
    });
    if (decision.kind === "approve") return { kind: "done", ...(decision.note !== undefined ? { note: decision.note } : {}) };
    return { kind: "reject", reason: decision.reason, ...(decision.step !== undefined ? { step: decision.step } : {}) };
  }

}

/** The groups a ticket's steps started, as its history names them. */
function ticketGroupIds(ticket: TicketView): string[] {
  const history: unknown[] = Array.isArray(ticket.history) ? ticket.history : [];
  return history.flatMap((entry) => {
    const { event, note } = (entry ?? {}) as { event?: unknown; note?: unknown };
    return event === "group started" && typeof note === "string" ? [note] : [];
  });
}

/** `{ [key]: limit }`, or nothing when no limit is set. */
function limitField<K extends string>(key: K, limit: number | undefined): Partial<Record<K, number>> {
  return limit === undefined ? {} : ({ [key]: limit } as Record<K, number>);
}

/** One step run's watch (QueueSteps.watchStep). */
export interface StepWatch {
  /** Flags the ticket awaiting_input with `message`, unless this step run already did. */
  flag(message: string): void;
  stop(): void;
  unflag(): Promise<void>;
}
