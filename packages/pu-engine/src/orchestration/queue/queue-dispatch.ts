/**
 * The work queue's dispatch: its state, the caps and slots, and tickets claimed from `queue/`
 * and launched. The steps of a claimed ticket are QueueSteps' (queue-steps.ts), restart,
 * reviews and the public answers QueueService's (queue-service.ts).
 */
import { randomBytes } from "node:crypto";
import type { FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { modelArgs } from "@pu/core/argv-value";
import { loadConfig, parseConfig, projectConfigWarnings, type Config } from "@pu/core/config";
import { DEFAULT_COLLECTION } from "@pu/core/default-workflows";
import { PuError } from "@pu/core/errors";
import type { AgentState } from "@pu/core/operator-state";
import { configPath, manifestPath, puDir } from "@pu/core/paths";
import { compareTickets } from "@pu/core/ticket";
import { stepAgent, type Workflow, type WorkflowStep } from "@pu/core/workflow";
import type { TicketView } from "@pu/ipc/protocol";
import { launchAgent } from "../../agents/launcher.js";
import type { LiveAgent } from "../../session/live-agent.js";
import type { GroupService } from "../groups/group-service.js";
import { nowIso, type EngineState } from "../../state.js";
import type { LaunchSlots } from "../launch-slots.js";
import { OperatorStateStore } from "./state-store.js";
import { appendHistory, ensureTicketDirs, moveTicket, scanTickets, watchQueueFolder } from "./tickets.js";
import { untrustedTicketIds } from "./ticket-trust.js";
import { recordAgentExit } from "./usage.js";
import { resolveWorkflow } from "./workflows.js";
import { DEFAULT_HUNG_MINUTES, runKey, exists, type TicketRun, type WaitingSlotRequest } from "./queue-run.js";

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
  protected groups: GroupService | undefined;
  protected dispatching = false;
  protected dispatchAgain = false;
  protected stopped = false;

  /** `store`: `$PU_HOME/state.json`, built by daemon.ts and shared with the group service (one writer: its lock). */
  constructor(
    protected readonly state: EngineState,
    readonly store: OperatorStateStore,
  ) {}
  // The later parts of the queue: a ticket's steps (QueueSteps), restart (QueueService).
  protected abstract drive(run: TicketRun, index: number, options?: { awaitingDecision?: boolean }): Promise<void>;
  protected abstract registerRun(agentState: AgentState): [AgentState, TicketRun];
  protected abstract settleUntracked(): Promise<void>;
  protected abstract continueTicket(agentState: AgentState, run: TicketRun): Promise<void>;


  /** Group steps run through the group service (built after the queue, on its slots). */
  useGroups(groups: GroupService): void {
    this.groups = groups;
  }

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
        void recordAgentExit(this.state, this.store, exit, succeeded);
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

  async setPaused(paused: boolean): Promise<boolean> {
    await this.store.update((s) => {
      s.paused = paused;
    });
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

  /** Why `$PU_HOME/config.yaml` cannot be used, as last read: while set the queue stands still. */
  protected homeConfigProblem: string | undefined;
  /** Project settings warnings already logged, so each is said once. */
  protected readonly loggedWarnings = new Set<string>();

  protected homeConfigFile(): string {
    return path.join(this.state.home, "config.yaml");
  }

  /**
   * `queue:` of `$PU_HOME/config.yaml`; CONFIG_ERROR naming the file and the field when it
   * cannot be used. Never defaults in its place: a typo must not run more agents than asked for.
   */
  protected async homeQueueSettings(): Promise<NonNullable<Config["queue"]>> {
    const file = this.homeConfigFile();
    let settings: NonNullable<Config["queue"]>;
    try {
      settings = parseConfig(await readFile(file, "utf8"), file).queue ?? {};
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        settings = {};
      } else {
        const problem = err instanceof PuError ? err : new PuError("CONFIG_ERROR", `config ${file}: cannot be read: ${(err as Error).message}`);
        if (this.homeConfigProblem !== problem.message) this.state.log.event("queue_config_unreadable", { file, error: problem.message });
        this.homeConfigProblem = problem.message;
        throw problem;
      }
    }
    if (this.homeConfigProblem !== undefined) this.state.log.event("queue_config_fixed", { file });
    this.homeConfigProblem = undefined;
    return settings;
  }

  /** The cap across projects; CONFIG_ERROR while `$PU_HOME/config.yaml` cannot be used. */
  async maxParallel(): Promise<number> {
    return (await this.homeQueueSettings()).maxParallel ?? Math.max(1, os.availableParallelism() - 1);
  }

  protected async projectSettings(root: string): Promise<{ maxPerProject: number; hungAfterMinutes: number; config: Config }> {
    // A bad home config stops dispatch (maxParallel); a ticket already working goes on with the defaults.
    const home = await this.homeQueueSettings().catch(() => ({}) as NonNullable<Config["queue"]>);
    const config = await loadConfig(root);
    for (const warning of projectConfigWarnings(config, configPath(root), this.homeConfigFile())) {
      if (this.loggedWarnings.has(warning)) continue;
      this.loggedWarnings.add(warning);
      this.state.log.event("queue_setting_ignored", { projectRoot: root, warning });
    }
    return {
      maxPerProject: config.queue?.maxPerProject ?? home.maxPerProject ?? Number.POSITIVE_INFINITY,
      hungAfterMinutes: config.queue?.hungAfterMinutes ?? home.hungAfterMinutes ?? DEFAULT_HUNG_MINUTES,
      config,
    };
  }

  /** Why nothing the queue holds will start now (stopped by a bad file, or paused); undefined when it runs. */
  async whyStopped(): Promise<string | undefined> {
    if (this.store.error !== undefined) return `the queue is stopped: ${this.store.error} (fix or move the file and restart the daemon)`;
    try {
      await this.maxParallel();
    } catch (err) {
      return `the queue is stopped: ${(err as Error).message} (fix the file, then \`pu queue resume\`)`;
    }
    return this.paused ? "the queue is paused (`pu queue resume`)" : undefined;
  }

  /** Slots taken by other automatic launchers (plan workers, group members), per project. */
  protected readonly borrowed = new Map<string, number>();
  protected readonly slotListeners = new Set<() => void>();
  /** Launches waiting in line for a slot (group members), served by dispatch passes. */
  protected readonly slotRequests: WaitingSlotRequest[] = [];
  /** When each stream (the ticket queue, each owner of requests) was last served: the fair order. */
  protected readonly lastServed = new Map<string, number>();
  protected servedCount = 0;
  /** Tickets (runKey) whose slot is lent to the members of their group step while it runs. */
  protected readonly lentToGroup = new Set<string>();

  protected borrowedIn(root?: string): number {
    if (root !== undefined) return this.borrowed.get(root) ?? 0;
    let total = 0;
    for (const n of this.borrowed.values()) total += n;
    return total;
  }

  /** Slots in use (in one project, or in all): tickets' agents and borrowed slots. */
  protected used(root?: string): number {
    const tickets = this.store.state.agents.filter((a) => (root === undefined || a.project === root) && !this.lentToGroup.has(runKey(a.project, a.ticket_id)));
    return tickets.length + this.borrowedIn(root);
  }

  protected takeSlot(root: string): () => void {
    this.borrowed.set(root, this.borrowedIn(root) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.borrowedIn(root) - 1;
      if (left > 0) this.borrowed.set(root, left);
      else this.borrowed.delete(root);
      this.kick("slot freed");
    };
  }

  /**
   * The caps and `paused` for the daemon's other automatic launches (plan workers, group
   * members): they see the same free slots as tickets, take one while their agent runs, and
   * are told when something may have freed one.
   */
  launchSlots(): LaunchSlots {
    return {
      paused: () => this.paused || this.state.stopping,
      free: async (root: string) => {
        const limit = await this.maxParallel().catch(() => 0);
        const settings = await this.projectSettings(root).catch(() => undefined);
        return Math.max(0, Math.min(limit - this.used(), (settings?.maxPerProject ?? Number.POSITIVE_INFINITY) - this.used(root)));
      },
      take: (root: string) => this.takeSlot(root),
      onChange: (listener: () => void) => {
        this.slotListeners.add(listener);
        return () => this.slotListeners.delete(listener);
      },
      request: (root: string, owner: string) => {
        let entry: WaitingSlotRequest | undefined;
        const granted = new Promise<() => void>((resolve) => {
          entry = { root, owner, since: Date.now(), grant: resolve };
          this.slotRequests.push(entry);
        });
        this.kick("slot requested");
        return {
          granted,
          cancel: () => {
            const i = entry ? this.slotRequests.indexOf(entry) : -1;
            if (i >= 0) this.slotRequests.splice(i, 1);
          },
        };
      },
    };
  }

  /** A ticket's group step runs: its own slot goes to the group's members until `returnSlot`. */
  lendSlot(root: string, ticketId: string): () => void {
    const key = runKey(root, ticketId);
    this.lentToGroup.add(key);
    this.kick("slot lent to a group");
    return () => {
      if (this.lentToGroup.delete(key)) this.kick("slot returned by a group");
    };
  }

  /** Something may have made work startable: dispatch (once at a time; a kick during a pass runs another). */
  kick(reason: string): void {
    if (this.stopped) return;
    for (const listener of [...this.slotListeners]) listener();
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
    // A bad $PU_HOME/config.yaml: nothing starts until it is fixed (logged once, shown by `pu queue`).
    const limit = await this.maxParallel().catch(() => undefined);
    if (limit === undefined || this.used() >= limit) return;
    const waiting: (TicketView & { root: string })[] = [];
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
      const untrusted = await untrustedTicketIds(this.state, root, candidates);
      for (const t of candidates.filter((c) => untrusted.has(c.id))) {
        if (this.reported.get(t.path) === "untrusted") continue;
        this.reported.set(t.path, "untrusted");
        this.state.log.event("ticket_untrusted", { projectRoot: root, ticketId: t.id, file: t.path });
      }
      waiting.push(...candidates.filter((t) => !untrusted.has(t.id)).map((t) => Object.assign(t, { root })));
    }
    waiting.sort(compareTickets);
    const settingsOf = new Map<string, Promise<Awaited<ReturnType<QueueDispatch["projectSettings"]>> | undefined>>();
    const settingsFor = (root: string) => {
      let settings = settingsOf.get(root);
      if (!settings) settingsOf.set(root, (settings = this.projectSettings(root).catch(() => undefined)));
      return settings;
    };
    const fits = async (root: string) => {
      const settings = await settingsFor(root);
      return settings !== undefined && this.used(root) < settings.maxPerProject;
    };
    for (;;) {
      if (this.blocked() || this.used() >= limit) return;
      const heads: { stream: string; since: number; serve: () => Promise<void> }[] = [];
      for (const ticket of waiting) {
        if (!(await fits(ticket.root))) continue;
        const settings = await settingsFor(ticket.root);
        heads.push({
          stream: "tickets",
          since: 0,
          serve: async () => {
            waiting.splice(waiting.indexOf(ticket), 1);
            if (settings) await this.claim(ticket.root, ticket, settings.config, reason);
          },
        });
        break;
      }
      const owners = new Set<string>();
      for (const request of this.slotRequests) {
        if (owners.has(request.owner)) continue;
        owners.add(request.owner);
        if (!(await fits(request.root))) continue;
        heads.push({
          stream: `request:${request.owner}`,
          since: request.since,
          serve: async () => {
            const i = this.slotRequests.indexOf(request);
            if (i < 0) return; // cancelled meanwhile
            this.slotRequests.splice(i, 1);
            request.grant(this.takeSlot(request.root));
          },
        });
      }
      if (heads.length === 0) return;
      heads.sort((a, b) => (this.lastServed.get(a.stream) ?? 0) - (this.lastServed.get(b.stream) ?? 0) || a.since - b.since);
      const next = heads[0] as (typeof heads)[number];
      this.lastServed.set(next.stream, ++this.servedCount);
      await next.serve();
    }
  }

  /** Takes a queued ticket: moves it to in-progress, records it, starts its agent and its steps. */
  protected async claim(root: string, ticket: TicketView, config: Config, reason: string): Promise<void> {
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
    };
    // Counted against the caps from here on, before any await can let another pass in.
    this.store.state.agents.push(agentState);
    const run: TicketRun = { root, ticketId: ticket.id, abort: new AbortController(), workflow };
    this.runs.set(key, run);
    try {
      await this.store.update(() => undefined);
      this.state.log.event("queue_slot_taken", { projectRoot: root, ticketId: ticket.id, used: this.store.state.agents.length, reason });
      await appendHistory(root, ticket.id, { event: "dispatched" });
      const live = await this.launchFor(run, agentState, tool, model, { kind: "new", name: ticket.id.toLowerCase() });
      this.state.events.emit("ticket_changed", { projectRoot: root, ticketId: ticket.id, kind: "dispatched", agentId: live.agentId });
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
      agentState.status = "running";
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
