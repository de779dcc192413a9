import { findAgent, type AgentEntry, type AgentStatus, type Manifest } from "@pu/core/manifest";
import { isAlive, type WaitingReason } from "@pu/core/status";
import type { AgentView, StatusEvent, StatusReport, WorktreeView } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import { sessionReadiness, type LiveAgent, type SessionReadiness } from "./session/live-agent.js";
import type { AgentStatusChange } from "./engine-events.js";
import type { EngineState } from "./state.js";
import { PuError } from "@pu/core/errors";
import { narrowToAgent } from "@pu/ipc/status-report";

/** Output is coalesced: status is recomputed at most this often while an agent prints. */
const OUTPUT_RECOMPUTE_MS = 100;
/** Screen content changes reach `subscribe_status` streams at most this often per project. */
const CONTENT_PUSH_MS = 250;
/** Streaming↔waiting flips of live agents reach the manifest at most this often per project. */
const PERSIST_DEBOUNCE_MS = 1000;
/** Fire the idle timer a little after the deadline so `idleSeconds > threshold` already holds. */
const IDLE_EPSILON_MS = 50;

interface Subscriber {
  requestId: number | string;
  ctx: ConnectionContext;
}

interface AgentTimers {
  output?: NodeJS.Timeout;
  idle?: NodeJS.Timeout;
  /** The lastMeaningfulAt the idle timer was armed for. */
  idleArmedFor?: number;
  /** Due when the readiness said its answer may change on its own (a screen settling). */
  recheck?: NodeJS.Timeout;
  recheckAt?: number;
  unsubscribe: () => void;
}

/** Skips a manifest write when nothing changed (ManifestStore.update writes unless fn throws). */
class NothingToWrite extends Error {}

/** The live status of an agent and why it waits; from the manifest when the daemon holds no PTY for it. */
function liveReadiness(live: LiveAgent | undefined, entry: AgentEntry): SessionReadiness {
  // Not held, suspended, or (be safe) the entry belongs to a newer process than the one held:
  // the stored status stands, and a stored waiting agent is one stopped to be resumed.
  if (!live || entry.suspended || (entry.pid !== undefined && entry.pid !== live.session.pid)) {
    return entry.status === "waiting" ? { status: "waiting", waitingReason: "suspended" } : { status: entry.status };
  }
  return sessionReadiness(live);
}

function agentView(state: EngineState, entry: AgentEntry, worktreeId: string | undefined): AgentView {
  const live = state.sessions.get(entry.id);
  const running = live !== undefined && live.session.exitCode === null;
  const readiness = liveReadiness(live, entry);
  const view: AgentView = {
    ...entry,
    status: readiness.status,
    storedStatus: entry.status,
    idleSeconds: running ? live.session.activity.idleSeconds() : null,
    live: running,
  };
  if (worktreeId) view.worktreeId = worktreeId;
  if (readiness.waitingReason) view.waitingReason = readiness.waitingReason;
  // The session the daemon holds for this entry (not one a newer process replaced).
  const held = live && (entry.pid === undefined || entry.pid === live.session.pid) ? live.session : undefined;
  // The process is gone but its exit is not in the manifest yet (being written, or the disk
  // refused it): the code a broken agent reports comes from the process, like its status.
  if (held && readiness.status === "broken" && held.exitCode !== null && entry.exitCode === undefined && !entry.suspended) view.exitCode = held.exitCode;
  // The screen as last parsed (at most SCREEN_FLUSH_MS behind): status never waits for a parse.
  if (held) {
    const screen = held.screen;
    view.lastScreenLine = screen.lastNonEmptyLine();
    view.contentHash = screen.contentHash;
    const changedAt = screen.lastContentChange;
    if (changedAt !== null) view.lastContentChange = new Date(changedAt).toISOString();
  }
  return view;
}

/** The manifest with every agent's status computed now (see AgentView). */
function buildStatusReport(state: EngineState, m: Manifest): StatusReport {
  const worktrees: Record<string, WorktreeView> = {};
  for (const [id, wt] of Object.entries(m.worktrees)) {
    const agents: Record<string, AgentView> = {};
    for (const [agentId, entry] of Object.entries(wt.agents)) agents[agentId] = agentView(state, entry, id);
    worktrees[id] = { ...wt, agents };
  }
  const agents: Record<string, AgentView> = {};
  for (const [agentId, entry] of Object.entries(m.agents)) agents[agentId] = agentView(state, entry, undefined);
  return { projectRoot: m.projectRoot, worktrees, agents, createdAt: m.createdAt, updatedAt: m.updatedAt };
}

/**
 * Keeps every live agent's effective status current without a polling tick: it is
 * recomputed on output (coalesced), on exit, on manifest writes, and by one timer per
 * agent at its idle deadline. Changes go to `state.events` ("agent_status"), to
 * `subscribe_status` streams, and (debounced) to the manifest. It learns of sessions
 * and manifest writes from the event bus.
 */
export class StatusWatch {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  private readonly known = new Map<string, AgentStatus>();
  private readonly knownReason = new Map<string, WaitingReason | undefined>();
  private readonly timers = new Map<string, AgentTimers>();
  private readonly pendingPush = new Map<string, AgentStatusChange[]>();
  private readonly pendingPersist = new Map<string, NodeJS.Timeout>();
  /** Per project: when screen content last went out to subscribers, and the push waiting for its turn. */
  private readonly contentPushes = new Map<string, { at: number; timer?: NodeJS.Timeout }>();
  private disposed = false;
  private readonly unsubscribe: (() => void)[];
  /** Adds what runs elsewhere (agents on hosts) to every pushed report; set by daemon.ts. */
  private overlay: (report: StatusReport) => StatusReport = (report) => report;
  /** Readies what the overlay reads for a project (its usage file, the price table) before a report a person asked for. */
  private prepare: (root: string) => Promise<void> = () => Promise.resolve();

  constructor(private readonly state: EngineState) {
    this.unsubscribe = [
      state.events.on("agent_registered", ({ live }) => this.track(live)),
      state.events.on("agent_released", ({ agentId }) => this.untrack(agentId)),
      state.events.on("agent_prompt_delivered", ({ live }) => this.recompute(live)),
      state.events.on("agent_turn_signal", ({ live }) => this.recompute(live)),
      state.events.on("manifest_changed", ({ projectRoot }) => this.schedulePush(projectRoot)),
    ];
  }

  /**
   * The project's status now (`pu status`): every agent (the overlay's too, as pushed reports
   * carry them), or the one asked for (AGENT_NOT_FOUND when it is not there).
   */
  async report(root: string, agentId?: string): Promise<StatusReport> {
    await this.prepare(root).catch(() => undefined);
    const report = this.overlay(buildStatusReport(this.state, await this.state.store.read(root)));
    if (agentId === undefined) return report;
    const narrowed = narrowToAgent(report, agentId);
    if (!narrowed) throw new PuError("AGENT_NOT_FOUND", `no agent ${agentId} in ${report.projectRoot}`);
    return narrowed;
  }

  /** Every report pushed to subscribers passes through `overlay` (the hosts' agents added). */
  setOverlay(overlay: (report: StatusReport) => StatusReport, prepare?: (root: string) => Promise<void>): void {
    this.overlay = overlay;
    if (prepare) this.prepare = prepare;
  }

  /** Something outside this machine's sessions changed (a host's report): subscribers hear of it. */
  externalChange(root: string, changes: AgentStatusChange[]): void {
    if (changes.length === 0) this.schedulePush(root);
    for (const change of changes) this.schedulePush(root, change);
  }

  /** Starts watching a freshly registered session. */
  private track(live: LiveAgent): void {
    this.untrack(live.agentId);
    const timers: AgentTimers = { unsubscribe: () => undefined };
    this.timers.set(live.agentId, timers);
    this.known.set(live.agentId, "streaming");
    const offOutput = live.session.onOutput(() => {
      if (timers.output) return;
      timers.output = setTimeout(() => {
        timers.output = undefined;
        this.recompute(live);
        this.armIdle(live, timers);
      }, OUTPUT_RECOMPUTE_MS);
    });
    // An Enter makes older evidence stale (agentReadiness), whether or not any output follows.
    const offSubmit = live.session.onSubmit(() => this.recompute(live));
    // A parse that changed the screen may change the verdict (a busy marker gone, a dialog up).
    const offScreen = live.session.screen.onChange(() => {
      this.recompute(live);
      this.pushContent(live.projectRoot);
    });
    const offExit = live.session.onExit(() => {
      clearTimeout(timers.output);
      clearTimeout(timers.idle);
      clearTimeout(timers.recheck);
      timers.output = timers.idle = timers.recheck = undefined;
      this.recompute(live);
    });
    timers.unsubscribe = () => {
      offOutput?.();
      offSubmit();
      offScreen();
      offExit?.();
    };
    this.armIdle(live, timers);
  }

  /** Stops watching (the session is being dropped). */
  private untrack(agentId: string): void {
    const timers = this.timers.get(agentId);
    if (!timers) return;
    clearTimeout(timers.output);
    clearTimeout(timers.idle);
    clearTimeout(timers.recheck);
    timers.unsubscribe();
    this.timers.delete(agentId);
    this.known.delete(agentId);
    this.knownReason.delete(agentId);
  }

  /**
   * One timer per agent, due when its idle time will pass the threshold. Output that
   * moves lastMeaningfulAt does not touch the timer; when it fires early it re-arms for
   * the new deadline, so a busy agent costs no timer churn.
   */
  private armIdle(live: LiveAgent, timers: AgentTimers): void {
    if (this.disposed || live.session.exitCode !== null) return;
    const last = live.session.activity.lastMeaningfulAt;
    if (timers.idle && timers.idleArmedFor === last) return;
    clearTimeout(timers.idle);
    const due = last + live.idleThresholdSeconds * 1000 + IDLE_EPSILON_MS;
    timers.idleArmedFor = last;
    timers.idle = setTimeout(() => {
      timers.idle = undefined;
      if (live.session.activity.lastMeaningfulAt !== last) {
        this.armIdle(live, timers);
        return;
      }
      this.recompute(live);
    }, Math.max(0, due - Date.now()));
    timers.idle.unref();
  }

  /** Recomputes one agent; on a change, tells listeners, subscribers and (later) the manifest. */
  private recompute(live: LiveAgent): void {
    if (this.disposed) return;
    if (this.state.sessions.get(live.agentId) !== live) return;
    const readiness = sessionReadiness(live);
    this.armRecheck(live, readiness.recheckAt);
    const now = readiness.status;
    const before = this.known.get(live.agentId) ?? null;
    const reasonBefore = this.knownReason.get(live.agentId);
    this.knownReason.set(live.agentId, readiness.waitingReason);
    if (before === now) {
      // Still waiting, for another reason (a permission dialog came up): subscribers see it.
      if (reasonBefore !== readiness.waitingReason) this.schedulePush(live.projectRoot);
      return;
    }
    this.known.set(live.agentId, now);
    const change: AgentStatusChange = { projectRoot: live.projectRoot, agentId: live.agentId, from: before, to: now };
    this.state.events.emit("agent_status", change);
    this.schedulePush(live.projectRoot, change);
    if (before !== null && isAlive(before) && isAlive(now) && live.stopIntent === undefined) {
      this.schedulePersist(live.projectRoot);
    }
  }

  /** One timer per agent for the time the readiness named; a later or equal one already armed stands. */
  private armRecheck(live: LiveAgent, at: number | undefined): void {
    const timers = this.timers.get(live.agentId);
    if (!timers || this.disposed) return;
    if (at === undefined) return;
    if (timers.recheck && timers.recheckAt !== undefined && timers.recheckAt <= at) return;
    clearTimeout(timers.recheck);
    timers.recheckAt = at;
    timers.recheck = setTimeout(() => {
      timers.recheck = timers.recheckAt = undefined;
      this.recompute(live);
    }, Math.max(0, at - Date.now()) + IDLE_EPSILON_MS);
    timers.recheck.unref();
  }

  /**
   * A screen changed: subscribers (a dashboard) get the new content hash and last line, at most
   * every CONTENT_PUSH_MS per project, so a flooding agent costs a few reports a second.
   */
  private pushContent(root: string): void {
    if (!this.subscribers.has(root) || this.disposed) return;
    const entry = this.contentPushes.get(root) ?? { at: 0 };
    this.contentPushes.set(root, entry);
    if (entry.timer) return;
    const wait = Math.max(0, entry.at + CONTENT_PUSH_MS - Date.now());
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      entry.at = Date.now();
      this.schedulePush(root);
    }, wait);
    entry.timer.unref();
  }

  async subscribe(root: string, requestId: number | string, ctx: ConnectionContext, m: Manifest): Promise<StatusReport> {
    let set = this.subscribers.get(root);
    if (!set) this.subscribers.set(root, (set = new Set()));
    const sub: Subscriber = { requestId, ctx };
    set.add(sub);
    await this.prepare(root).catch(() => undefined);
    ctx.onClose(() => {
      set.delete(sub);
      if (set.size === 0 && this.subscribers.get(root) === set) this.subscribers.delete(root);
    });
    return this.overlay(buildStatusReport(this.state, m));
  }

  private schedulePush(root: string, change?: AgentStatusChange): void {
    if (!this.subscribers.has(root)) return;
    const pending = this.pendingPush.get(root);
    if (pending) {
      if (change) pending.push(change);
      return;
    }
    this.pendingPush.set(root, change ? [change] : []);
    // Coalesce a burst (several agents flipping, a write right after) into one event.
    setTimeout(() => void this.push(root), 20);
  }

  private async push(root: string): Promise<void> {
    const changed = this.pendingPush.get(root) ?? [];
    this.pendingPush.delete(root);
    const set = this.subscribers.get(root);
    if (!set || set.size === 0 || this.disposed) return;
    let m: Manifest;
    try {
      m = await this.state.store.read(root);
    } catch (err) {
      this.state.log.event("status_push_failed", { projectRoot: root, error: err });
      return;
    }
    const report = this.overlay(buildStatusReport(this.state, m));
    for (const sub of set) {
      const event: StatusEvent = {
        type: "status_event",
        id: sub.requestId,
        projectRoot: root,
        report,
        changed: changed.map(({ agentId, from, to }) => ({ agentId, from, to })),
      };
      sub.ctx.send(event);
    }
  }

  private schedulePersist(root: string): void {
    if (this.pendingPersist.has(root)) return;
    const timer = setTimeout(() => {
      this.pendingPersist.delete(root);
      void this.persist(root);
    }, PERSIST_DEBOUNCE_MS);
    this.pendingPersist.set(root, timer);
  }

  /** Writes the current streaming/waiting status of the project's running agents. */
  private async persist(root: string): Promise<void> {
    if (this.disposed) return;
    try {
      await this.state.updateManifest(root, (m) => {
        let changed = false;
        for (const live of this.state.liveAgentsOf(root)) {
          // Exits and deliberate stops record themselves; only plain running agents are ours.
          if (live.session.exitCode !== null || live.stopIntent !== undefined) continue;
          const entry = findAgent(m, live.agentId)?.agent;
          if (!entry || entry.suspended || !isAlive(entry.status)) continue;
          const now = this.known.get(live.agentId);
          if (now && isAlive(now) && entry.status !== now) {
            entry.status = now;
            changed = true;
          }
        }
        if (!changed) throw new NothingToWrite();
      });
    } catch (err) {
      if (!(err instanceof NothingToWrite)) this.state.log.event("status_persist_failed", { projectRoot: root, error: err });
    }
  }

  dispose(): void {
    this.disposed = true;
    for (const off of this.unsubscribe) off();
    for (const id of [...this.timers.keys()]) this.untrack(id);
    for (const timer of this.pendingPersist.values()) clearTimeout(timer);
    for (const entry of this.contentPushes.values()) clearTimeout(entry.timer);
    this.pendingPersist.clear();
    this.subscribers.clear();
  }
}

