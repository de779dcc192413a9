/**
 * The work queue's dispatch: its state, the caps and slots, and tickets claimed from `queue/`
 * and launched. The steps of a claimed ticket are QueueSteps' (queue-steps.ts), restart,
 * reviews and the public answers QueueService's (queue-service.ts).
 */
import type { UsageService } from "../../usage/usage-service.js";
import { randomBytes } from "node:crypto";
import type { FSWatcher } from "node:fs";
import path from "node:path";
import { modelArgs } from "@pu/core/argv-value";
import { type Config } from "@pu/core/config";
import { DEFAULT_COLLECTION } from "@pu/core/default-workflows";
import type { AgentState } from "@pu/core/operator-state";
import { manifestPath, puDir } from "@pu/core/paths";
import { compareTickets } from "@pu/core/ticket";
import { stepAgent, type Workflow, type WorkflowStep } from "@pu/core/workflow";
import type { TicketView } from "@pu/ipc/protocol";
import { launchAgent } from "../../agents/launcher.js";
import type { LiveAgent } from "../../session/live-agent.js";
import type { GroupService } from "../groups/group-service.js";
import { nowIso, type EngineState } from "../../state.js";
import { OperatorStateStore } from "./state-store.js";
import { appendHistory, ensureTicketDirs, moveTicket, scanTickets, watchQueueFolder } from "./tickets.js";
import { trustForPass, untrustedTicketIds } from "./ticket-trust.js";
import { recordAgentExit } from "./usage.js";
import { resolveWorkflow } from "./workflows.js";
import { runKey, exists, waitsForDecision, type TicketRun } from "./queue-run.js";
import { leftoverWorktree, REQUEUED_AFTER_RESTART } from "./leftover-worktree.js";
import type { SlotLedger } from "../slots.js";
import type { HostMembers } from "../../hosts/host-members.js";
import { LOCAL_PLACE } from "@pu/core/hosts-file";

export abstract class QueueDispatch {
  protected readonly runs = new Map<string, TicketRun>();
  protected readonly watchers = new Map<string, FSWatcher>();
  /** Tickets that failed to start, left in `queue/` and not retried until `pu queue resume` or a daemon restart. */
  protected readonly held = new Map<string, string>();
  /** In-progress tickets that cannot go on until `pu trust` (their workflow changed by hand), continued on project_trusted. */
  protected readonly awaitingTrust = new Map<string, () => void>();
  /** Unreadable ticket files already logged (file → message), so each is reported once. */
  protected readonly reported = new Map<string, string>();
  protected readonly unsubscribe: (() => void)[] = [];
  protected dispatching = false;
  protected dispatchAgain = false;
  protected stopped = false;

  /** `store`: `$PU_HOME/state.json`, built by daemon.ts and shared with the group service (one writer: its lock). */
  constructor(
    protected readonly state: EngineState,
    readonly store: OperatorStateStore,
    protected readonly slots: SlotLedger,
    /** A ticket's group step runs through the group service. */
    protected readonly groups: GroupService,
    /** Budgets of tickets and steps are set on, and read off, their agents. */
    protected readonly budgets: UsageService,
    /** Tickets placed on hosts (`queue.hosts`) run their steps there through this; absent: here only. */
    protected readonly hostMembers?: HostMembers,
  ) {
    // Registered first: a change the ledger hears starts a dispatch pass before the other launchers look.
    slots.onChange((reason) => this.dispatchSoon(reason));
  }
  // The later parts of the queue: a ticket's steps (QueueSteps), restart (QueueService).
  protected abstract drive(run: TicketRun, index: number, options?: { awaitingDecision?: boolean }): Promise<void>;
  protected abstract registerRun(agentState: AgentState): [AgentState, TicketRun];
  protected abstract settleUntracked(): Promise<void>;
  protected abstract continueTicket(agentState: AgentState, run: TicketRun): Promise<void>;

  get paused(): boolean {
    return this.store.state.paused;
  }

  /** Reads state.json: before the daemon answers anything, so no request acts on a state not yet read. */
  async load(): Promise<void> {
    await this.store.load();
    if (this.store.error) this.state.log.event("queue_state_unreadable", { problem: this.store.error });
  }

  /** Watches every known project's queue, picks up in-progress tickets, dispatches. */
  async start(): Promise<void> {
    this.unsubscribe.push(
      this.state.events.on("agent_exit", (exit) => {
        // An agent pu stopped after its work was done (finishedBy) counts as a success.
        const succeeded = exit.exitCode === 0 || exit.finishedBy !== undefined;
        void recordAgentExit(this.state, this.store, exit, succeeded, () => this.budgets.finalFigures(exit.projectRoot, exit.agentId));
      }),
      this.state.events.on("project_added", ({ projectRoot }) => {
        void this.watchProject(projectRoot).then(() => this.kick("project added"));
      }),
      // `pu trust` is also "try again" for tickets held by an untrusted workflow or agent type.
      this.state.events.on("project_trusted", ({ projectRoot }) => {
        for (const key of [...this.held.keys()]) if (key.startsWith(`${projectRoot}\0`)) this.held.delete(key);
        for (const [key, resume] of [...this.awaitingTrust]) {
          if (!key.startsWith(`${projectRoot}\0`)) continue;
          this.awaitingTrust.delete(key);
          resume();
        }
        this.kick("project trusted");
      }),
    );
    // Registered before any await, so a review decision that arrives while they are being
    // picked up finds its ticket.
    const inFlight = this.store.error ? [] : this.store.state.agents.map((agentState) => this.registerRun(agentState));
    for (const root of this.state.projects.list()) await this.watchProject(root);
    await this.settleUntracked();
    for (const [agentState, run] of inFlight) await this.continueTicket(agentState, run);
    this.kick("daemon start");
  }

  /** Stops watching and driving tickets; their state stays as written, for the next daemon to continue. */
  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    for (const run of this.runs.values()) run.abort.abort();
  }

  async watchProject(root: string): Promise<void> {
    if (this.watchers.has(root) || this.stopped) return;
    // A project that was deleted (or never initialized) must not get a `.pu/` made for it.
    if (!(await exists(manifestPath(root)))) return;
    try {
      await ensureTicketDirs(root);
    } catch (err) {
      this.state.log.event("queue_watch_failed", { projectRoot: root, error: err });
      return;
    }
    const watcher = watchQueueFolder(
      root,
      () => this.kick("ticket folder changed"),
      (err) => this.state.log.event("queue_watch_failed", { projectRoot: root, error: err }),
    );
    if (watcher) this.watchers.set(root, watcher);
  }

  /** Projects whose daily budget is spent today, and what to tell a person (`pu queue`, `pu dash`). */
  protected readonly budgetProblems = new Map<string, string>();

  /** A project's daily budget is spent: the queue pauses (all of it: its slots are shared) and says why. */
  async budgetSpent(root: string, message: string): Promise<void> {
    this.budgetProblems.set(root, message);
    if (!this.paused) await this.setPaused(true);
  }

  async setPaused(paused: boolean): Promise<boolean> {
    await this.store.update((s) => {
      s.paused = paused;
    });
    // Resuming is a person's answer to a spent budget too.
    if (!paused) this.budgetProblems.clear();
    this.state.log.event(paused ? "queue_paused" : "queue_resumed", {});
    this.state.events.emit("queue_paused", { paused });
    if (!paused) {
      // `pu queue resume` is also how a person says "try again" (after `pu trust`, a fixed workflow).
      this.held.clear();
      this.kick("resumed");
    }
    return paused;
  }

  // ---- caps and dispatch ------------------------------------------------------------

  /** Why nothing the queue holds will start now (stopped by a bad file, or paused); undefined when it runs. */
  async whyStopped(): Promise<string | undefined> {
    if (this.store.error !== undefined) return `the queue is stopped: ${this.store.error} (fix or move the file and restart the daemon)`;
    try {
      await this.slots.maxParallel();
    } catch (err) {
      return `the queue is stopped: ${(err as Error).message} (fix the file, then \`pu queue resume\`)`;
    }
    return this.paused ? "the queue is paused (`pu queue resume`)" : undefined;
  }

  /** Something may have made work startable: every launcher waiting on the ledger hears it, the queue dispatches. */
  kick(reason: string): void {
    if (this.stopped) return;
    this.slots.changed(reason);
  }

  /** Dispatch (once at a time; a change during a pass runs another). */
  private dispatchSoon(reason: string): void {
    if (this.stopped) return;
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    this.dispatching = true;
    void (async () => {
      try {
        do {
          this.dispatchAgain = false;
          await this.dispatchPass(reason);
        } while (this.dispatchAgain && !this.stopped);
      } catch (err) {
        this.state.log.event("queue_dispatch_failed", { reason, error: err });
      } finally {
        this.dispatching = false;
      }
    })();
  }

  protected blocked(): boolean {
    return this.stopped || this.state.stopping || this.paused || this.store.error !== undefined;
  }

  /**
   * Fills free slots from the streams that wait for one: the ticket queue (in ticket order) and
   * each owner's slot requests (in request order). The stream served longest ago goes next, so
   * every release drains groups' and tickets' launches in turn.
   */
  protected async dispatchPass(reason: string): Promise<void> {
    if (this.blocked()) return;
    const waiting: (TicketView & { root: string })[] = [];
    // One read of trust.json answers for every project's tickets in this pass.
    const trust = trustForPass(this.state);
    for (const root of this.state.projects.list()) {
      const scan = await scanTickets(root, ["queue"]).catch((err: unknown) => {
        this.state.log.event("queue_scan_failed", { projectRoot: root, error: err });
        return { tickets: [], problems: [] };
      });
      for (const problem of scan.problems) {
        if (this.reported.get(problem.file) === problem.message) continue;
        this.reported.set(problem.file, problem.message);
        this.state.log.event("ticket_invalid", { file: problem.file, message: problem.message });
      }
      const candidates = scan.tickets.filter((t) => !this.held.has(runKey(root, t.id)));
      // A ticket pu did not write for its person waits for `pu trust` (said once per version of it).
      const untrusted = await untrustedTicketIds(this.state, root, candidates, trust);
      for (const t of candidates.filter((c) => untrusted.has(c.id))) {
        if (this.reported.get(t.path) === "untrusted") continue;
        this.reported.set(t.path, "untrusted");
        this.state.log.event("ticket_untrusted", { projectRoot: root, ticketId: t.id, file: t.path });
      }
      waiting.push(...candidates.filter((t) => !untrusted.has(t.id)).map((t) => Object.assign(t, { root })));
    }
    waiting.sort(compareTickets);
    await this.slots.fill(async (placeFor, settingsFor) => {
      for (const ticket of waiting) {
        const place = await placeFor(ticket.root);
        if (place === undefined) continue;
        const settings = await settingsFor(ticket.root);
        return {
          serve: async () => {
            waiting.splice(waiting.indexOf(ticket), 1);
            if (settings) await this.claim(ticket.root, ticket, settings.config, reason, place);
          },
        };
      }
      return undefined;
    }, () => this.blocked());
  }


  /**
   * Takes a queued ticket: moves it to in-progress, records it, starts its agent and its steps.
   * On a host (`place`, from the project's `queue.hosts`) each step runs there (queue-host-steps.ts).
   */
  protected async claim(root: string, ticket: TicketView, config: Config, reason: string, place: string = LOCAL_PLACE): Promise<void> {
    const key = runKey(root, ticket.id);
    if (this.runs.has(key)) return;
    const collection = this.store.state.project_collection_prefs?.[root] ?? DEFAULT_COLLECTION;
    let workflow: Workflow;
    try {
      workflow = (await resolveWorkflow(this.state, root, ticket.type, collection)).workflow;
    } catch (err) {
      await this.hold(root, ticket.id, err);
      return;
    }
    try {
      await moveTicket(root, ticket.id, "queue", "in-progress");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // cancelled or taken meanwhile
      throw err;
    }
    const first = workflow.steps[0] as WorkflowStep;
    const stats = this.store.state.project_llm_stats?.[root];
    const tool = stepAgent(first, ticket, stats?.preferred_tool, config.defaultAgent);
    const model = first.model ?? ticket.model ?? (stats?.preferred_tool === tool ? stats?.preferred_model : undefined) ?? null;
    const launchMode = typeof ticket.launch_mode === "string" ? ticket.launch_mode : workflow.launch_mode;
    const now = nowIso();
    const agentState: AgentState = {
      id: `q-${randomBytes(4).toString("hex")}`,
      ticket_id: ticket.id,
      ticket_type: ticket.type,
      project: root,
      status: "starting",
      started_at: now,
      last_activity: now,
      last_message: null,
      paired: false,
      session_name: null,
      session_wrapper: "pu",
      session_context_ref: null,
      content_hash: null,
      current_step: first.name,
      step_started_at: null,
      last_content_change: now,
      completed_steps: [],
      llm_tool: tool,
      llm_model: model,
      launch_mode: launchMode,
      review_state: null,
      worktree_path: null,
      ...(place !== LOCAL_PLACE ? { host: place } : {}),
    };
    // Counted against the caps from here on, before any await can let another pass in.
    this.store.state.agents.push(agentState);
    const run: TicketRun = { root, ticketId: ticket.id, abort: new AbortController(), workflow };
    this.runs.set(key, run);
    try {
      await this.store.update(() => undefined);
      this.state.log.event("queue_slot_taken", { projectRoot: root, ticketId: ticket.id, used: this.store.state.agents.length, reason });
      // A dispatch cut short by the daemon's death may have made the ticket's worktree already
      // (the restart sent the ticket back here): it works there rather than leave it behind unowned.
      const reuse = place === LOCAL_PLACE && requeuedAfterRestart(ticket) ? await this.leftoverOf(root, ticket.id) : undefined;
      const note = place !== LOCAL_PLACE ? `on host ${place}` : reuse ? `in worktree ${reuse}, made by its dispatch before the daemon's restart` : undefined;
      await appendHistory(root, ticket.id, { event: "dispatched", ...(note !== undefined ? { note } : {}) });
      if (place === LOCAL_PLACE) {
        const live = await this.launchFor(run, agentState, tool, model, reuse ? { kind: "worktree", worktree: reuse } : { kind: "new", name: ticket.id.toLowerCase() });
        this.state.events.emit("ticket_changed", { projectRoot: root, ticketId: ticket.id, kind: "dispatched", agentId: live.agentId });
      } else {
        // Its steps start its agents there, each as the step begins.
        await this.store.update(() => {
          agentState.status = "running";
        });
        this.state.events.emit("ticket_changed", { projectRoot: root, ticketId: ticket.id, kind: "dispatched" });
      }
    } catch (err) {
      this.runs.delete(key);
      await this.store.update((s) => {
        s.agents = s.agents.filter((a) => a !== agentState);
      }).catch(() => undefined);
      await moveTicket(root, ticket.id, "in-progress", "queue").catch(() => undefined);
      await this.hold(root, ticket.id, err);
      return;
    }
    void this.drive(run, 0);
  }

  /** The worktree an interrupted dispatch of the ticket left (leftover-worktree.ts); none when it cannot tell. */
  private async leftoverOf(root: string, ticketId: string): Promise<string | undefined> {
    const owned = new Set(this.store.state.agents.flatMap((a) => (a.project === root && a.session_context_ref ? [a.session_context_ref] : [])));
    try {
      const id = await leftoverWorktree(this.state, root, ticketId, owned);
      if (id !== undefined) this.state.log.event("ticket_worktree_reused", { projectRoot: root, ticketId, worktreeId: id });
      return id;
    } catch (err) {
      this.state.log.event("ticket_leftover_unreadable", { projectRoot: root, ticketId, error: err });
      return undefined;
    }
  }

  protected async hold(root: string, ticketId: string, err: unknown): Promise<void> {
    const message = (err as Error).message;
    this.held.set(runKey(root, ticketId), message);
    this.state.log.event("ticket_held", { projectRoot: root, ticketId, error: message });
    await appendHistory(root, ticketId, { event: "not started", note: message }).catch(() => undefined);
  }

  /** Starts the ticket's agent (in a new worktree, or the ticket's own) and records it. */
  protected async launchFor(
    run: TicketRun,
    agentState: AgentState,
    tool: string,
    model: string | null,
    placement: { kind: "new"; name: string } | { kind: "worktree"; worktree: string },
  ): Promise<LiveAgent> {
    const outputFile = this.outputFile(run.root, run.ticketId);
    const launched = await launchAgent(this.state, {
      projectRoot: run.root,
      agentType: tool,
      placement,
      env: { PU_TICKET_ID: run.ticketId, PU_OUTPUT_FILE: outputFile },
      ...(agentState.launch_mode === "yolo" ? { unattended: true } : {}),
      ...(model !== null && tool !== "terminal" ? { extraArgs: modelArgs(model) } : {}),
    });
    if (model !== null) launched.live.model = model;
    run.live = launched.live;
    await this.store.update(() => {
      agentState.session_name = launched.agentId;
      agentState.session_context_ref = launched.worktreeId ?? null;
      agentState.worktree_path = launched.worktreePath ?? launched.cwd;
      agentState.llm_tool = tool;
      agentState.llm_model = model;
      // A ticket waiting for a review (or another decision) still waits with its new agent: only
      // the decision puts it back to running (a restart starts its agent again while it waits).
      if (!waitsForDecision(agentState)) agentState.status = "running";
      agentState.last_activity = nowIso();
    });
    return launched.live;
  }

  protected outputFile(root: string, ticketId: string): string {
    return path.join(puDir(root), "tickets", "output", `${ticketId}.md`);
  }

  protected agentStateOf(run: TicketRun): AgentState | undefined {
    return this.store.state.agents.find((a) => a.project === run.root && a.ticket_id === run.ticketId);
  }

}

/** Whether a restart sent the ticket back to queue/ (its history says so). */
function requeuedAfterRestart(ticket: TicketView): boolean {
  return Array.isArray(ticket.history) && ticket.history.some((h) => (h as { event?: unknown } | null)?.event === REQUEUED_AFTER_RESTART);
}
