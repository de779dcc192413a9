/**
 * The work queue: tickets dispatched to agents up to the caps, each worked through its
 * workflow's steps (one `turn` per step), with gates, artifacts, reviews and timeouts, and its
 * state kept in `$PU_HOME/state.json`. Dispatch is driven by events (a ticket added, a slot
 * freed, resume, daemon start), never by a polling tick. `paused` holds every launch the daemon
 * makes on its own; the scheduler asks `paused` too.
 */
import { createHash, randomBytes } from "node:crypto";
import type { FSWatcher } from "node:fs";
import { access, mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { modelArgs } from "@pu/core/argv-value";
import { loadConfig, parseConfig, projectConfigWarnings, type Config } from "@pu/core/config";
import { DEFAULT_COLLECTION } from "@pu/core/default-workflows";
import { isPuError, PuError } from "@pu/core/errors";
import { aggregatedText, isGroupFinished } from "@pu/core/group";
import { findAgent } from "@pu/core/manifest";
import type { AgentState, CompletedTicket } from "@pu/core/operator-state";
import { configPath, manifestPath, puDir, worktreesDir } from "@pu/core/paths";
import { renderTemplate } from "@pu/core/template";
import { compareTickets } from "@pu/core/ticket";
import { ticketTrustKey } from "@pu/core/trust";
import { stepAgent, type Workflow, type WorkflowStep } from "@pu/core/workflow";
import type { QueueStatus, ReviewItem, TicketView } from "@pu/ipc/protocol";
import { launchAgent, resumeAgent } from "../../agents/launcher.js";
import type { LiveAgent } from "../../session/live-agent.js";
import { stopAgents, stopFinishedAgents } from "../../agents/stop.js";
import { startTurn, type TurnResult } from "../../agents/turn.js";
import { mergeWorktree } from "../../git/merge.js";
import type { GroupService } from "../groups/group-service.js";
import { nowIso, type EngineState } from "../../state.js";
import { appendGateRun, gateFixRequest, runGate, toGateRun } from "../../gates/gates.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { WorkOwner } from "../../agents/owners.js";
import { OperatorStateStore, operatorStatePath } from "./state-store.js";
import { appendHistory, ensureTicketDirs, findTicket, moveTicket, scanTickets, ticketSummary, watchQueueFolder, writeTicketField } from "./tickets.js";
import { ticketStillTrusted, untrustedTicketIds, untrustedTicketProblems } from "./ticket-trust.js";
import { recordAgentExit } from "./usage.js";
import { resolveWorkflow } from "./workflows.js";

/** Completed records kept in state.json (the newest). */
const COMPLETED_KEPT = 200;
/** How much gate output a fix request quotes. */
const FIX_OUTPUT_BYTES = 2000;
const DEFAULT_HUNG_MINUTES = 30;

/** `last_message` of a ticket that waits for `pu review approve|reject` without a review state (a gate out of retries). */
const NEEDS_DECISION = "needs a decision:";

/** A review, or a gate out of retries: `pu review approve|reject` decides (a timeout notice is not asked a question). */
function waitsForDecision(agentState: AgentState): boolean {
  return agentState.status === "awaiting_input" && (agentState.review_state != null || agentState.last_message?.startsWith(NEEDS_DECISION) === true);
}

const REVIEW_STATES = { plan: "pending_plan", visual: "pending_visual", pr: "pending_pr_creation" } as const;

type Decision = { kind: "approve"; note?: string } | { kind: "reject"; reason: string; step?: string };

interface TicketRun {
  root: string;
  ticketId: string;
  abort: AbortController;
  workflow: Workflow;
  live?: LiveAgent;
  /** Set while the ticket waits for a person (`pu review approve|reject`). */
  decide?: (decision: Decision) => void;
  /** A decision that came before the ticket was waiting again (just after a restart). */
  pending?: Decision;
  finished?: boolean;
}

interface WaitingSlotRequest {
  root: string;
  owner: string;
  since: number;
  grant: (release: () => void) => void;
}

function runKey(root: string, ticketId: string): string {
  return `${root}\0${ticketId}`;
}

function stripTerminal(text: string): string {
  return text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r/g, "");
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** Where `file` really is when that is outside `dir` (a symlink out of the worktree); undefined when it is inside. */
async function resolvesOutside(dir: string, file: string): Promise<string | undefined> {
  const [realDir, realFile] = await Promise.all([realpath(dir), realpath(file)]);
  const relative = path.relative(realDir, realFile);
  return relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative) ? realFile : undefined;
}

export class QueueService {
  readonly store: OperatorStateStore;
  private readonly runs = new Map<string, TicketRun>();
  private readonly watchers = new Map<string, FSWatcher>();
  /** Tickets that failed to start, left in `queue/` and not retried until `pu queue resume` or a daemon restart. */
  private readonly held = new Map<string, string>();
  /** In-progress tickets that cannot go on until `pu trust` (their workflow changed by hand), continued on project_trusted. */
  private readonly awaitingTrust = new Map<string, () => void>();
  /** Agents the queue stopped after their work succeeded: their exit counts as a success. */
  private readonly finishedAgents = new Set<string>();
  /** Unreadable ticket files already logged (file → message), so each is reported once. */
  private readonly reported = new Map<string, string>();
  private readonly unsubscribe: (() => void)[] = [];
  private groups: GroupService | undefined;
  private dispatching = false;
  private dispatchAgain = false;
  private stopped = false;

  constructor(private readonly state: EngineState) {
    this.store = new OperatorStateStore(operatorStatePath(state.home));
  }

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
        const succeeded = exit.exitCode === 0 || this.finishedAgents.delete(exit.agentId);
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
  private homeConfigProblem: string | undefined;
  /** Project settings warnings already logged, so each is said once. */
  private readonly loggedWarnings = new Set<string>();

  private homeConfigFile(): string {
    return path.join(this.state.home, "config.yaml");
  }

  /**
   * `queue:` of `$PU_HOME/config.yaml`; CONFIG_ERROR naming the file and the field when it
   * cannot be used. Never defaults in its place: a typo must not run more agents than asked for.
   */
  private async homeQueueSettings(): Promise<NonNullable<Config["queue"]>> {
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

  private async projectSettings(root: string): Promise<{ maxPerProject: number; hungAfterMinutes: number; config: Config }> {
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
  private readonly borrowed = new Map<string, number>();
  private readonly slotListeners = new Set<() => void>();
  /** Launches waiting in line for a slot (group members), served by dispatch passes. */
  private readonly slotRequests: WaitingSlotRequest[] = [];
  /** When each stream (the ticket queue, each owner of requests) was last served: the fair order. */
  private readonly lastServed = new Map<string, number>();
  private servedCount = 0;
  /** Tickets (runKey) whose slot is lent to the members of their group step while it runs. */
  private readonly lentToGroup = new Set<string>();

  private borrowedIn(root?: string): number {
    if (root !== undefined) return this.borrowed.get(root) ?? 0;
    let total = 0;
    for (const n of this.borrowed.values()) total += n;
    return total;
  }

  /** Slots in use (in one project, or in all): tickets' agents and borrowed slots. */
  private used(root?: string): number {
    const tickets = this.store.state.agents.filter((a) => (root === undefined || a.project === root) && !this.lentToGroup.has(runKey(a.project, a.ticket_id)));
    return tickets.length + this.borrowedIn(root);
  }

  private takeSlot(root: string): () => void {
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

  /** An agent the daemon stopped after its work was done: its exit counts as a success in the stats. */
  countAsSuccess(agentId: string): void {
    this.finishedAgents.add(agentId);
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

  private blocked(): boolean {
    return this.stopped || this.state.stopping || this.paused || this.store.error !== undefined;
  }

  /**
   * Fills free slots from the streams that wait for one: the ticket queue (in ticket order) and
   * each owner's slot requests (in request order). The stream served longest ago goes next, so
   * every release drains groups' and tickets' launches in turn.
   */
  private async dispatchPass(reason: string): Promise<void> {
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
    const settingsOf = new Map<string, Promise<Awaited<ReturnType<QueueService["projectSettings"]>> | undefined>>();
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
  private async claim(root: string, ticket: TicketView, config: Config, reason: string): Promise<void> {
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

  private async hold(root: string, ticketId: string, err: unknown): Promise<void> {
    const message = (err as Error).message;
    this.held.set(runKey(root, ticketId), message);
    this.state.log.event("ticket_held", { projectRoot: root, ticketId, error: message });
    await appendHistory(root, ticketId, { event: "not started", note: message }).catch(() => undefined);
  }

  /** Starts the ticket's agent (in a new worktree, or the ticket's own) and records it. */
  private async launchFor(
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

  private outputFile(root: string, ticketId: string): string {
    return path.join(puDir(root), "tickets", "output", `${ticketId}.md`);
  }

  private agentStateOf(run: TicketRun): AgentState | undefined {
    return this.store.state.agents.find((a) => a.project === run.root && a.ticket_id === run.ticketId);
  }

  // ---- steps ---------------------------------------------------------------------------

  /**
   * Works the ticket from step `index`. `resumeState` (after a restart): the step was already
   * typed; a pending review or awaiting_input waits for the person instead of re-running.
   */
  private async drive(run: TicketRun, index: number, options: { awaitingDecision?: boolean } = {}): Promise<void> {
    let i = index;
    let extra: string | undefined;
    let awaiting = options.awaitingDecision ?? false;
    try {
      while (i < run.workflow.steps.length) {
        const step = run.workflow.steps[i] as WorkflowStep;
        let outcome: StepOutcome;
        if (awaiting) {
          awaiting = false;
          outcome = await this.waitForPerson(run, step, undefined, undefined);
        } else if (step.type !== undefined) {
          outcome = await this.runGroupStep(run, step, extra);
        } else {
          await this.ensureStepAgent(run, step);
          outcome = await this.runStep(run, step, extra);
        }
        extra = undefined;
        if (outcome.kind === "stopped") return;
        if (outcome.kind === "failed") return await this.fail(run, outcome.message);
        if (outcome.kind === "reject") {
          const target = outcome.step === undefined ? i : run.workflow.steps.findIndex((s) => s.name === outcome.step);
          i = target < 0 ? i : target;
          extra = `Review: changes requested${outcome.step ? ` (back to step "${outcome.step}")` : ""}: ${outcome.reason}`;
          continue;
        }
        await this.store.update(() => {
          const a = this.agentStateOf(run);
          if (a) a.completed_steps = [...new Set([...(a.completed_steps ?? []), step.name])];
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

  /** The step names an agent type other than the current one (or the agent is gone): a new agent in the ticket's worktree. */
  private async ensureStepAgent(run: TicketRun, step: WorkflowStep): Promise<void> {
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
      this.finishedAgents.add(live.agentId);
      await stopFinishedAgents([live], "queue");
    }
    const worktree = agentState.session_context_ref;
    if (!worktree) throw new PuError("INVALID_STATE", `ticket ${run.ticketId} has no worktree to start step ${step.name} in`);
    await this.launchFor(run, agentState, tool, model, { kind: "worktree", worktree });
  }

  private async runStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome> {
    const live = run.live;
    if (!live) return { kind: "failed", message: `no agent for step ${step.name}` };
    const ticket = await findTicket(run.root, run.ticketId);
    // Each step types the ticket's text again: a hand edit since it was trusted must not reach the agent.
    if (!(await ticketStillTrusted(this.state, run.root, ticket))) return editedSinceTrusted(run.ticketId);
    await this.markStepStarted(run, step, live.agentId);
    const vars = await this.stepVars(run, ticket, step);
    const prompt = renderTemplate(step.prompt, vars).text.trimEnd();
    let text = extra ? `${extra}\n\n${prompt}` : prompt;
    for (let attempt = 0; ; attempt++) {
      const answered = await this.stepTurn(run, live, step, text);
      if (answered === "stopped") return { kind: "stopped" };
      if (answered !== "waiting") return { kind: "failed", message: answered };
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

  private async markStepStarted(run: TicketRun, step: WorkflowStep, agentId: string | undefined): Promise<void> {
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
  private async stepVars(run: TicketRun, ticket: TicketView, step: WorkflowStep): Promise<Record<string, string>> {
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

  private groupOutputFile(root: string, ticketId: string): string {
    return path.join(puDir(root), "tickets", "output", `${ticketId}.group.md`);
  }

  /**
   * A group step: the ticket's agent stops (its slot goes to the members), the group runs, and
   * the ticket goes on with the group's aggregated output (GROUP_OUTPUT in the next prompts).
   * A group that fails waits for `pu review approve|reject`, like a gate out of retries.
   */
  private async runGroupStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome> {
    const groups = this.groups;
    if (!groups || step.type === undefined) return { kind: "failed", message: `step ${step.name}: multi-agent groups are not running in this daemon` };
    const ticket = await findTicket(run.root, run.ticketId);
    if (!(await ticketStillTrusted(this.state, run.root, ticket))) return editedSinceTrusted(run.ticketId);
    const agentState = this.agentStateOf(run);
    if (!agentState) return { kind: "failed", message: `ticket ${run.ticketId} has no state` };
    await this.markStepStarted(run, step, undefined);
    const live = run.live;
    if (live && live.session.exitCode === null) {
      this.finishedAgents.add(live.agentId);
      await stopFinishedAgents([live], "queue");
    }
    const giveBack = this.lendSlot(run.root, run.ticketId);
    try {
      let group = groups.openGroupOfStep(run.root, run.ticketId, step.name);
      if (!group) {
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
          ...(step.read_only && agentState.session_context_ref ? { sharedWorktree: agentState.session_context_ref } : {}),
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
   * One turn for the step. A timeout (or a screen that has not changed for hungAfterMinutes
   * while the agent is busy) marks the ticket awaiting_input once; the turn goes on, nothing is killed.
   */
  private async stepTurn(run: TicketRun, live: LiveAgent, step: WorkflowStep, text: string): Promise<"waiting" | "stopped" | string> {
    const { hungAfterMinutes } = await this.projectSettings(run.root);
    const started = startTurn(this.state, live, text, { signal: run.abort.signal });
    let flagged = false;
    const flag = (message: string) => {
      if (flagged) return;
      flagged = true;
      void this.markAwaiting(run, null, message).catch(() => undefined);
    };
    let lastOutput = Date.now();
    let hungTimer: NodeJS.Timeout | undefined;
    const hungMs = hungAfterMinutes * 60_000;
    const armHung = () => {
      clearTimeout(hungTimer);
      hungTimer = setTimeout(() => {
        if (Date.now() - lastOutput >= hungMs) flag(`the agent's screen has not changed for ${hungAfterMinutes} min while it is busy (step ${step.name})`);
        else armHung();
      }, Math.min(hungMs, 2 ** 31 - 1));
    };
    // The rendered screen, not raw output: a TUI redrawing the same frame is as stuck as a silent one.
    const offOutput = live.session.screen.onChange(() => {
      lastOutput = Date.now();
    });
    armHung();
    const stepTimer =
      step.timeout_minutes !== undefined
        ? setTimeout(() => flag(`step ${step.name} timed out after ${step.timeout_minutes} min; the agent is still working`), step.timeout_minutes * 60_000)
        : undefined;
    let result: TurnResult;
    try {
      result = await started.done;
    } finally {
      clearTimeout(stepTimer);
      clearTimeout(hungTimer);
      offOutput();
    }
    // Cancelled or shutting down: whatever the turn saw (an exit, most likely) is not the agent's doing.
    if (result.outcome === "aborted" || run.abort.signal.aborted || this.stopped || this.state.stopping) return "stopped";
    if (flagged && result.outcome === "waiting") {
      await this.store.update(() => {
        const a = this.agentStateOf(run);
        if (a && a.review_state == null) {
          a.status = "running";
          a.last_message = null;
        }
      });
    }
    if (result.outcome === "waiting") {
      await this.touch(run, live);
      return "waiting";
    }
    return `the agent ${live.agentId} exited (code ${result.exitCode ?? "?"}) during step ${step.name}`;
  }

  /** Records activity and the screen's hash (change detection across restarts). */
  private async touch(run: TicketRun, live: LiveAgent): Promise<void> {
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
  private async checkStep(run: TicketRun, live: LiveAgent, step: WorkflowStep, attempt: number): Promise<string | undefined> {
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

  private async markAwaiting(run: TicketRun, reviewState: string | null, message: string | null): Promise<void> {
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
  private async waitForPerson(run: TicketRun, step: WorkflowStep, reviewState: string | null | undefined, message: string | undefined): Promise<StepOutcome> {
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

  // ---- the end of a ticket -----------------------------------------------------------------

  private async complete(run: TicketRun): Promise<void> {
    const ticket = await findTicket(run.root, run.ticketId);
    let summary = "";
    try {
      summary = (await readFile(this.outputFile(run.root, run.ticketId), "utf8")).trim();
    } catch {
      // no output file: the agent's last screen lines
    }
    if (!summary && run.live) {
      const tail = run.live.session.ring.tail(8192).data.toString("utf8");
      summary = stripTerminal(tail).split("\n").map((l) => l.trimEnd()).filter((l) => l.trim() !== "").slice(-10).join("\n");
    }
    let note: string | undefined;
    if (run.workflow.finish === "merge") note = await this.mergeTicketWorktree(run);
    if (note !== undefined && note.startsWith("merge failed")) return this.fail(run, note);
    await this.finish(run, "done", summary.slice(0, 4000), Array.isArray(ticket.output_tickets) ? (ticket.output_tickets as string[]) : [], note);
  }

  private async fail(run: TicketRun, message: string): Promise<void> {
    this.state.log.event("ticket_failed", { projectRoot: run.root, ticketId: run.ticketId, message });
    await this.finish(run, "failed", `failed: ${message}`, [], message);
  }

  /** Moves the ticket to done/, keeps a completed record, frees the slot (the worktree stays). */
  private async finish(run: TicketRun, outcome: "done" | "failed" | "cancelled", summary: string, outputTickets: string[], note?: string): Promise<void> {
    // Once per ticket: a cancel racing the ticket's own end (or failure) must not record it twice.
    if (run.finished) return;
    run.finished = true;
    const live = run.live;
    if (live && live.session.exitCode === null) {
      if (outcome === "done") {
        this.finishedAgents.add(live.agentId);
        await stopFinishedAgents([live], "queue");
      } else {
        await stopAgents([live], "kill");
      }
    }
    const agentState = this.agentStateOf(run);
    const record: CompletedTicket = {
      ticket_id: run.ticketId,
      ticket_type: agentState?.ticket_type ?? run.ticketId.split("-")[0] ?? "",
      project: run.root,
      summary,
      completed_at: nowIso(),
      pr_url: null,
      output_tickets: outputTickets,
    };
    await this.store.update((s) => {
      s.agents = s.agents.filter((a) => a !== agentState);
      s.completed = [...s.completed, record].slice(-COMPLETED_KEPT);
    });
    // After the record: a crash in between leaves an in-progress ticket with a completed record,
    // which the next start moves on to done/ (see settleUntracked).
    await moveTicket(run.root, run.ticketId, "in-progress", "done").catch((err: unknown) =>
      this.state.log.event("ticket_move_failed", { projectRoot: run.root, ticketId: run.ticketId, error: err }),
    );
    await appendHistory(run.root, run.ticketId, { event: outcome, ...(note !== undefined ? { note } : {}) }).catch(() => undefined);
    this.runs.delete(runKey(run.root, run.ticketId));
    await this.forgetTrust(run.root, run.ticketId);
    this.state.log.event("queue_slot_freed", { projectRoot: run.root, ticketId: run.ticketId, outcome, used: this.store.state.agents.length });
    this.state.events.emit("ticket_changed", { projectRoot: run.root, ticketId: run.ticketId, kind: outcome, ...(note !== undefined ? { message: note } : {}) });
    this.kick("slot freed");
  }

  /** A ticket in done/ never runs again: its trust record goes (trust.json stays small). */
  private async forgetTrust(root: string, ticketId: string): Promise<void> {
    await this.state.trust.forget(root, [ticketTrustKey(ticketId)]).catch((err: unknown) => this.state.log.event("trust_forget_failed", { projectRoot: root, ticketId, error: err }));
  }

  private async mergeTicketWorktree(run: TicketRun): Promise<string> {
    const worktreeId = this.agentStateOf(run)?.session_context_ref;
    if (!worktreeId) return "merge failed: the ticket has no worktree";
    const m = await this.state.store.read(run.root);
    const wt = m.worktrees[worktreeId];
    if (!wt?.baseBranch) return "merge failed: the worktree has no base branch";
    try {
      const outcome = await mergeWorktree({
        projectRoot: run.root,
        path: wt.path,
        branch: wt.branch,
        baseBranch: wt.baseBranch,
        strategy: "merge",
        worktreesDir: worktreesDir(run.root),
        ignoreUntracked: (await loadConfig(run.root)).envFiles,
      });
      await this.state.updateManifest(run.root, (fresh) => {
        const entry = fresh.worktrees[worktreeId];
        if (entry && !outcome.alreadyUpToDate) {
          entry.status = "merged";
          entry.mergedAt = nowIso();
        }
      });
      return outcome.alreadyUpToDate ? "nothing to merge" : `merged into ${wt.baseBranch}`;
    } catch (err) {
      return `merge failed: ${(err as Error).message}`;
    }
  }

  // ---- restart -------------------------------------------------------------------------------

  private registerRun(agentState: AgentState): [AgentState, TicketRun] {
    const run: TicketRun = { root: agentState.project, ticketId: agentState.ticket_id, abort: new AbortController(), workflow: { launch_mode: "default", steps: [] } };
    this.runs.set(runKey(run.root, run.ticketId), run);
    return [agentState, run];
  }

  /** After a restart (or SIGKILL): a ticket state.json has in flight goes on, its agent resumed or a new one re-prompted. */
  private async continueTicket(agentState: AgentState, run: TicketRun): Promise<void> {
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
    const collection = this.store.state.project_collection_prefs?.[root] ?? DEFAULT_COLLECTION;
    let live: LiveAgent;
    try {
      run.workflow = (await resolveWorkflow(this.state, root, ticket.type, collection)).workflow;
      live = await this.reattach(run, agentState);
      run.live = live;
    } catch (err) {
      if (isPuError(err) && err.code === "UNTRUSTED") return this.waitForTrust(agentState, run, err.message);
      return this.fail(run, `could not continue after a restart: ${(err as Error).message}`);
    }
    const index = Math.max(0, run.workflow.steps.findIndex((s) => s.name === agentState.current_step));
    // Waiting for a person survives the restart; a timeout notice does not (the step is typed again).
    const awaitingDecision = waitsForDecision(agentState);
    this.state.log.event("ticket_continued", { projectRoot: root, ticketId: ticket.id, step: agentState.current_step, agentId: live.agentId });
    await appendHistory(root, ticket.id, { event: "continued after a daemon restart", ...(agentState.current_step ? { step: agentState.current_step } : {}) }).catch(() => undefined);
    void this.drive(run, index, { awaitingDecision });
  }

  /** The ticket's workflow changed by hand while the daemon was down: it waits (in progress) for `pu trust`, then goes on. */
  private async waitForTrust(agentState: AgentState, run: TicketRun, reason: string): Promise<void> {
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
  private async settleUntracked(): Promise<void> {
    for (const root of this.state.projects.list()) {
      const scan = await scanTickets(root, ["in-progress"]).catch(() => ({ tickets: [] as TicketView[] }));
      for (const ticket of scan.tickets) {
        if (this.store.state.agents.some((a) => a.project === root && a.ticket_id === ticket.id)) continue;
        const completed = this.store.state.completed.some((c) => c.project === root && c.ticket_id === ticket.id);
        const to = completed ? "done" : "queue";
        await moveTicket(root, ticket.id, "in-progress", to).catch(() => undefined);
        await appendHistory(root, ticket.id, { event: completed ? "done" : "requeued after a daemon restart" }).catch(() => undefined);
        this.state.log.event("ticket_settled", { projectRoot: root, ticketId: ticket.id, to });
      }
    }
  }

  /** The ticket's agent again: resumed when it was suspended, else a new one in the ticket's worktree. */
  private async reattach(run: TicketRun, agentState: AgentState): Promise<LiveAgent> {
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
      maxParallel = await this.maxParallel();
    } catch (err) {
      configError = (err as Error).message;
    }
    const waiting: QueueStatus["waiting"] = [];
    const problems: QueueStatus["problems"] = [];
    const warnings: string[] = [];
    for (const root of this.state.projects.list()) {
      const scan = await scanTickets(root, ["queue"]).catch(() => ({ tickets: [], problems: [] }));
      waiting.push(...scan.tickets.map((t) => ({ ...ticketSummary(t), project: root })));
      problems.push(...scan.problems);
      for (const t of scan.tickets) {
        const held = this.held.get(runKey(root, t.id));
        if (held !== undefined) problems.push({ file: t.path, message: `not started: ${held}` });
      }
      problems.push(...(await untrustedTicketProblems(this.state, root, scan.tickets)));
      // A project whose config cannot be read has tickets that never start: say why.
      if (!(await exists(manifestPath(root)))) continue;
      try {
        warnings.push(...projectConfigWarnings(await loadConfig(root), configPath(root), this.homeConfigFile()));
      } catch (err) {
        problems.push({ file: configPath(root), message: `${(err as Error).message} (its tickets do not start)` });
      }
    }
    waiting.sort(compareTickets);
    const used = this.used();
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

  private isPaired(agentState: AgentState): boolean {
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
    const live = run.live;
    const stoppedAgents = live && live.session.exitCode === null ? [live.agentId] : [];
    const worktreePath = this.agentStateOf(run)?.worktree_path ?? undefined;
    await this.finish(run, "cancelled", "cancelled", [], "cancelled by request");
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

/** A ticket changed by hand while it was worked: nothing more of it is typed. */
function editedSinceTrusted(ticketId: string): StepOutcome {
  return { kind: "failed", message: `ticket ${ticketId} was edited by hand since it was trusted, so none of it is typed any more; read it, run \`pu trust\` and queue it again` };
}

type StepOutcome =
  | { kind: "done"; note?: string }
  | { kind: "reject"; reason: string; step?: string }
  | { kind: "failed"; message: string }
  | { kind: "stopped" };

