/**
 * The work queue: tickets dispatched to agents up to the caps, each worked through its
 * workflow's steps (one `turn` per step), with gates, artifacts, reviews and timeouts, and its
 * state kept in `$PU_HOME/state.json`. Dispatch is driven by events (a ticket added, a slot
 * freed, resume, daemon start), never by a polling tick. `paused` holds every launch the daemon
 * makes on its own; the scheduler asks `paused` too.
 */
import os from "node:os";
import { loadConfig, projectConfigWarnings } from "@pu/core/config";
import { DEFAULT_COLLECTION } from "@pu/core/default-workflows";
import { isPuError, PuError } from "@pu/core/errors";
import { findAgent } from "@pu/core/manifest";
import type { AgentState } from "@pu/core/operator-state";
import type { WorkflowStep } from "@pu/core/workflow";
import { configPath, manifestPath } from "@pu/core/paths";
import { compareTickets } from "@pu/core/ticket";
import type { QueueStatus, ReviewItem, TicketView } from "@pu/ipc/protocol";
import { resumeAgent } from "../../agents/launcher.js";
import type { LiveAgent } from "../../session/live-agent.js";
import { nowIso } from "../../state.js";
import type { WorkOwner } from "../../agents/owners.js";
import { appendHistory, findTicket, moveTicket, scanTickets, ticketSummary, writeTicketField } from "./tickets.js";
import { trustFileProblem, trustForPass, untrustedTicketProblems } from "./ticket-trust.js";
import { collectionExists, resolveWorkflow } from "./workflows.js";
import { waitsForDecision, runKey, exists, endingOf, endingSummary, type Decision, type TicketRun } from "./queue-run.js";
import { QueueHostSteps } from "./queue-host-steps.js";
import { REQUEUED_AFTER_RESTART } from "./leftover-worktree.js";

export class QueueService extends QueueHostSteps {
  // ---- restart -------------------------------------------------------------------------------

  protected registerRun(agentState: AgentState): [AgentState, TicketRun] {
    const run: TicketRun = { root: agentState.project, ticketId: agentState.ticket_id, abort: new AbortController(), workflow: { launch_mode: "default", steps: [] } };
    this.runs.set(runKey(run.root, run.ticketId), run);
    return [agentState, run];
  }

  /** After a restart (or SIGKILL): a ticket state.json has in flight goes on, its agent resumed or a new one re-prompted. */
  protected async continueTicket(agentState: AgentState, run: TicketRun): Promise<void> {
    const root = agentState.project;
    const drop = async (why: string) => {
      this.runs.delete(runKey(root, run.ticketId));
      this.state.log.event("ticket_state_dropped", { projectRoot: root, ticketId: agentState.ticket_id, why });
      await this.store.update((s) => {
        s.agents = s.agents.filter((a) => a !== agentState);
      });
    };
    let ticket: TicketView;
    try {
      ticket = await findTicket(root, agentState.ticket_id);
    } catch {
      return drop("its ticket file is gone");
    }
    if (ticket.state !== "in-progress") return drop(`its ticket is in ${ticket.state}/`);
    // Killed between its dispatch and its agent's start: nothing of it ran, so it starts over.
    if (!agentState.host && !agentState.session_context_ref) return this.requeue(agentState, run);
    const collection = this.store.state.project_collection_prefs?.[root] ?? DEFAULT_COLLECTION;
    // Waiting for a person survives the restart; a timeout notice does not (the step is typed again).
    // Read before the agent is started again, which is no answer to the question the ticket waits on.
    const awaitingDecision = waitsForDecision(agentState);
    let live: LiveAgent | undefined;
    let index = 0;
    try {
      run.workflow = (await resolveWorkflow(this.state, root, ticket.type, collection)).workflow;
      index = restartIndex(run.workflow.steps, agentState, awaitingDecision);
      // On a host the step's group is followed there again (queue-host-steps.ts); nothing to reattach here.
      // With every step done only the ticket's end is left, which needs no agent.
      live = agentState.host || index >= run.workflow.steps.length ? undefined : await this.reattach(run, agentState);
      run.live = live;
    } catch (err) {
      if (isPuError(err) && err.code === "UNTRUSTED") return this.waitForTrust(agentState, run, err.message);
      // The workflow's trust could not be checked, which is no fault of the ticket: it waits for the
      // file (the problem says to fix it and run `pu trust`, which continues it).
      const trustProblem = await trustFileProblem(this.state);
      if (trustProblem !== undefined) return this.waitForTrust(agentState, run, `could not continue after a restart: trust.json cannot be read: ${trustProblem}`);
      return this.fail(run, `could not continue after a restart: ${(err as Error).message}`);
    }
    // A decision given while the ticket was being picked up, for the wait state.json showed then,
    // which it no longer has: it waited for `pu trust` since (trust.json unreadable) and runs its
    // step from the start now. Kept, it would answer that step's own review or decision later. An
    // approval is what running the step does; a reject sends the ticket back as it asks.
    const pending = run.pending;
    if (!awaitingDecision && pending) {
      run.pending = undefined;
      if (pending.kind === "reject" && index < run.workflow.steps.length) index = await this.sendBack(run, index, pending);
    }
    // The step it goes on with (none: all were done, only the ticket's end is left).
    const step = run.workflow.steps[index]?.name;
    this.state.log.event("ticket_continued", { projectRoot: root, ticketId: ticket.id, step, agentId: live?.agentId ?? agentState.session_name, ...(agentState.host ? { host: agentState.host } : {}) });
    await appendHistory(root, ticket.id, { event: "continued after a daemon restart", ...(step ? { step } : {}) }).catch(() => undefined);
    void this.drive(run, index, { awaitingDecision });
  }

  /**
   * A ticket dispatched but with no agent or worktree recorded goes back to queue/ and is
   * dispatched again as any other, in the worktree the cut-short dispatch made if it can tell
   * which (leftover-worktree.ts). The history line comes first (a ticket seen in queue/ already
   * says why), then the state entry goes, then the move: a crash in between leaves an in-progress
   * ticket without state, which settleUntracked sends back too.
   */
  protected async requeue(agentState: AgentState, run: TicketRun): Promise<void> {
    const root = run.root;
    this.runs.delete(runKey(root, run.ticketId));
    await appendHistory(root, run.ticketId, { event: REQUEUED_AFTER_RESTART, note: "the daemon stopped before its agent started" }).catch(() => undefined);
    await this.store.update((s) => {
      s.agents = s.agents.filter((a) => a !== agentState);
    });
    await moveTicket(root, run.ticketId, "in-progress", "queue").catch((err: unknown) => this.state.log.event("ticket_move_failed", { projectRoot: root, ticketId: run.ticketId, error: err }));
    this.state.log.event("ticket_settled", { projectRoot: root, ticketId: run.ticketId, to: "queue", why: "no agent was recorded for it" });
  }

  /** The ticket's workflow changed by hand while the daemon was down: it waits (in progress) for `pu trust`, then goes on. */
  protected async waitForTrust(agentState: AgentState, run: TicketRun, reason: string): Promise<void> {
    await this.store.update(() => {
      agentState.status = "awaiting_input";
      agentState.last_message = reason;
    });
    this.awaitingTrust.set(runKey(run.root, run.ticketId), () => void this.continueTicket(agentState, run));
    this.state.log.event("ticket_awaiting_trust", { projectRoot: run.root, ticketId: run.ticketId, reason });
  }

  /**
   * In-progress tickets state.json does not track (a crash between two writes): one with a
   * completed record goes on to done/, any other back to queue/ to start over.
   */
  protected async settleUntracked(): Promise<void> {
    for (const root of this.state.projects.list()) {
      const scan = await scanTickets(root, ["in-progress"]).catch(() => ({ tickets: [] as TicketView[] }));
      for (const ticket of scan.tickets) {
        if (this.store.state.agents.some((a) => a.project === root && a.ticket_id === ticket.id)) continue;
        const record = this.store.state.completed.findLast((c) => c.project === root && c.ticket_id === ticket.id);
        const to = record ? "done" : "queue";
        // Written before the move, as finish does: a ticket seen in its new folder already says
        // why. The ending may already be there (finish writes it just before its move).
        const last = Array.isArray(ticket.history) ? (ticket.history.at(-1) as { event?: unknown } | undefined)?.event : undefined;
        const ended = record && (last === "done" || last === "failed" || last === "cancelled");
        if (!ended) await appendHistory(root, ticket.id, { event: record ? endingOf(record) : REQUEUED_AFTER_RESTART }).catch(() => undefined);
        await moveTicket(root, ticket.id, "in-progress", to).catch(() => undefined);
        this.state.log.event("ticket_settled", { projectRoot: root, ticketId: ticket.id, to });
      }
    }
  }

  /** The ticket's agent again: resumed when it was suspended, else a new one in the ticket's worktree. */
  protected async reattach(run: TicketRun, agentState: AgentState): Promise<LiveAgent> {
    const agentId = agentState.session_name;
    if (agentId) {
      const running = this.state.sessions.get(agentId);
      if (running && running.session.exitCode === null) return running;
      const m = await this.state.store.read(run.root);
      const found = findAgent(m, agentId);
      if (found?.agent.suspended) {
        try {
          await resumeAgent(this.state, run.root, agentId);
          const live = this.state.sessions.get(agentId);
          if (live) return live;
        } catch (err) {
          this.state.log.event("ticket_resume_failed", { projectRoot: run.root, ticketId: run.ticketId, error: err });
        }
      }
    }
    const worktree = agentState.session_context_ref;
    if (!worktree) throw new PuError("INVALID_STATE", "no worktree recorded");
    return this.launchFor(run, agentState, agentState.llm_tool ?? "terminal", agentState.llm_model ?? null, { kind: "worktree", worktree });
  }

  // ---- requests --------------------------------------------------------------------------

  async status(): Promise<QueueStatus> {
    let maxParallel = 0;
    let configError: string | undefined;
    try {
      maxParallel = await this.slots.maxParallel();
    } catch (err) {
      configError = (err as Error).message;
    }
    const waiting: QueueStatus["waiting"] = [];
    const problems: QueueStatus["problems"] = [];
    const warnings: string[] = [];
    const trust = trustForPass(this.state);
    for (const root of this.state.projects.list()) {
      const scan = await scanTickets(root, ["queue"]).catch(() => ({ tickets: [], problems: [] }));
      waiting.push(...scan.tickets.map((t) => ({ ...ticketSummary(t), project: root })));
      problems.push(...scan.problems);
      for (const t of scan.tickets) {
        const held = this.held.get(runKey(root, t.id));
        if (held !== undefined) problems.push({ file: t.path, message: `not started: ${held}` });
      }
      problems.push(...(await untrustedTicketProblems(this.state, root, scan.tickets, trust)));
      // A project whose config cannot be read has tickets that never start: say why.
      if (!(await exists(manifestPath(root)))) continue;
      try {
        const config = await loadConfig(root);
        warnings.push(...projectConfigWarnings(config, configPath(root), this.slots.homeConfigFile()));
        // A place that is no host never has room: the project's tickets would wait there unsaid.
        for (const place of config.queue?.hosts ?? []) {
          if (!(await this.slots.placeKnown(place))) problems.push({ file: configPath(root), message: `queue.hosts: no host named ${place} (pu host list; local is this machine)` });
        }
      } catch (err) {
        problems.push({ file: configPath(root), message: `${(err as Error).message} (its tickets do not start)` });
      }
    }
    for (const [root, message] of this.budgetProblems) problems.push({ file: configPath(root), message });
    waiting.sort(compareTickets);
    const used = this.slots.used();
    const status: QueueStatus = {
      paused: this.paused,
      maxParallel,
      slotsUsed: used,
      slotsFree: configError !== undefined || this.store.error !== undefined ? 0 : Math.max(0, maxParallel - used),
      running: this.store.state.agents.map((a) => ({ ...a, paired: this.isPaired(a) })),
      waiting,
      problems,
      warnings,
    };
    if (this.store.error) status.stateError = this.store.error;
    if (configError !== undefined) status.configError = configError;
    return status;
  }

  protected isPaired(agentState: AgentState): boolean {
    const live = agentState.session_name ? this.state.sessions.get(agentState.session_name) : undefined;
    return live !== undefined && live.session.viewerCount > 0;
  }

  reviews(root: string | undefined): ReviewItem[] {
    return this.store.state.agents
      .filter((a) => a.status === "awaiting_input" && (root === undefined || a.project === root))
      .map((a) => ({
        ticketId: a.ticket_id,
        project: a.project,
        step: a.current_step ?? null,
        reviewState: a.review_state ?? null,
        lastMessage: a.last_message ?? null,
        agentId: a.session_name ?? null,
        worktreePath: a.worktree_path ?? null,
      }));
  }

  async decide(root: string, ticketId: string, decision: Decision): Promise<string | null> {
    this.store.ensureUsable();
    const run = this.runs.get(runKey(root, ticketId));
    const agentState = this.store.state.agents.find((a) => a.project === root && a.ticket_id === ticketId);
    if (!run || !agentState) throw new PuError("NOT_FOUND", `ticket ${ticketId} is not in progress in ${root}`);
    if (!waitsForDecision(agentState)) {
      throw new PuError("INVALID_STATE", `ticket ${ticketId} is not waiting for a review (it is ${agentState.status}${agentState.current_step ? `, step ${agentState.current_step}` : ""})`);
    }
    if (decision.kind === "reject" && decision.step !== undefined && !run.workflow.steps.some((s) => s.name === decision.step)) {
      throw new PuError("INVALID_ARGUMENT", `the workflow of ${ticketId} has no step "${decision.step}" (steps: ${run.workflow.steps.map((s) => s.name).join(", ")})`);
    }
    const step = agentState.current_step ?? null;
    await appendHistory(root, ticketId, {
      event: decision.kind === "approve" ? "approved" : "rejected",
      ...(step ? { step } : {}),
      by: os.userInfo().username,
      ...(decision.kind === "approve" ? (decision.note !== undefined ? { note: decision.note } : {}) : { note: decision.reason }),
    });
    // Picked up (after a restart) but not yet waiting again: the decision is kept for it.
    if (run.decide) run.decide(decision);
    else run.pending = decision;
    return step;
  }

  /** Cancels a queued or running ticket: its agent is stopped, its worktree kept, the ticket moved to done/. */
  async cancel(root: string, ticketId: string): Promise<{ stoppedAgents: string[]; worktreePath?: string }> {
    const ticket = await findTicket(root, ticketId);
    if (ticket.state === "done") throw new PuError("INVALID_STATE", `ticket ${ticketId} is already done`);
    const run = this.runs.get(runKey(root, ticketId));
    if (ticket.state === "queue" || !run) {
      await moveTicket(root, ticketId, ticket.state, "done");
      this.held.delete(runKey(root, ticketId));
      await appendHistory(root, ticketId, { event: "cancelled" });
      await this.forgetTrust(root, ticketId);
      return { stoppedAgents: [] };
    }
    run.abort.abort();
    await this.cancelHostStep(run);
    const live = run.live;
    const onHost = this.agentStateOf(run)?.host ? this.agentStateOf(run)?.session_name : undefined;
    const stoppedAgents = live && live.session.exitCode === null ? [live.agentId] : onHost ? [onHost] : [];
    const worktreePath = this.agentStateOf(run)?.worktree_path ?? undefined;
    await this.finish(run, "cancelled", endingSummary("cancelled", "cancelled by request"), [], "cancelled by request");
    return { stoppedAgents, ...(worktreePath ? { worktreePath } : {}) };
  }

  /** The worktrees and agents of the project's tickets in flight (state.json's `agents`), for `pu clean` and `pu kill`. */
  ownedWork(root: string): WorkOwner[] {
    return this.store.state.agents
      .filter((a) => a.project === root)
      .map((a) => {
        const live = this.runs.get(runKey(root, a.ticket_id))?.live;
        const agentIds = [...new Set([a.session_name, live?.agentId].filter((id): id is string => typeof id === "string" && id !== ""))];
        return { kind: "ticket", id: a.ticket_id, agentIds, worktreeIds: a.session_context_ref ? [a.session_context_ref] : [] };
      });
  }

  /** The agents a ticket in flight ran on its host (one per step there), for its budget. */
  hostAgents(root: string, ticketId: string): { host: string; agentId: string }[] {
    const a = this.store.state.agents.find((s) => s.project === root && s.ticket_id === ticketId);
    const host = a?.host;
    return host ? (a.host_agents ?? []).map((agentId) => ({ host, agentId })) : [];
  }

  /** A ticket created from inside an agent: recorded as the output of that agent's ticket. */
  async recordOutputTicket(callerAgentId: string, newTicketId: string): Promise<string | undefined> {
    const owner = this.store.state.agents.find((a) => a.session_name === callerAgentId);
    if (!owner) return undefined;
    const ticket = await findTicket(owner.project, owner.ticket_id);
    const previous = Array.isArray(ticket.output_tickets) ? (ticket.output_tickets as string[]) : [];
    await writeTicketField(owner.project, owner.ticket_id, "output_tickets", [...previous, newTicketId]);
    return owner.ticket_id;
  }

  async setCollection(root: string, name: string): Promise<void> {
    // A typo would stall every ticket of the project on "no workflow … in collection".
    if (!(await collectionExists(this.state, root, name))) {
      throw new PuError("NOT_FOUND", `no workflow collection "${name}": make .pu/workflows/${name}/ (or $PU_HOME/workflows/${name}/) with its TYPE.yaml files first`);
    }
    await this.store.update((s) => {
      (s.project_collection_prefs ??= {})[root] = name;
    });
  }

  async prefer(root: string, tool: string, model: string | null): Promise<void> {
    await this.store.update((s) => {
      const stats = (s.project_llm_stats ??= {});
      const entry = (stats[root] ??= { project: root, updated_at: nowIso() });
      entry.preferred_tool = tool;
      entry.preferred_model = model;
      entry.updated_at = nowIso();
    });
  }
}

/**
 * The step a restarted ticket goes on from: its current one, unless that was recorded done (the
 * daemon died between a step's end and the next step's start, or during the ticket's end), which
 * must not run twice: then the next one, or past the last when only the ending is left. A ticket
 * waiting for a decision waits on its current step. A step the workflow no longer has: the first.
 */
function restartIndex(steps: readonly WorkflowStep[], agentState: AgentState, awaitingDecision: boolean): number {
  const current = steps.findIndex((s) => s.name === agentState.current_step);
  if (current < 0) return 0;
  const done = !awaitingDecision && (agentState.completed_steps ?? []).includes(steps[current]?.name ?? "");
  return done ? current + 1 : current;
}
