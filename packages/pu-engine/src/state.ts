import { EventEmitter } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { findAgent, listAgents, type AgentEntry, type AgentStatus, type Manifest, type WorktreeEntry } from "@pu/core/manifest";
import { ManifestStore } from "@pu/core/manifest-store";
import { manifestPath } from "@pu/core/paths";
import type { NoticeEvent } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { AgentSession } from "./agent-session.js";
import type { DaemonLog } from "./daemon-log.js";
import type { ProjectRegistry } from "./projects.js";
import type { Scheduler } from "./scheduler.js";
import type { TriggerRunner } from "./trigger-runner.js";
import { StatusWatch } from "./status-watch.js";
import { TrustStore } from "./trust-store.js";

/** Why the daemon itself is stopping an agent; decides what its exit is recorded as. */
export type StopIntent = "kill" | "suspend" | "shutdown" | "clean";

/** An agent whose PTY this daemon holds (running, or exited but its output still readable). */
export interface LiveAgent extends SessionPlacement {
  /** Set before the daemon stops the process; undefined when the agent exits on its own. */
  stopIntent?: StopIntent;
  /**
   * The spawn prompt has not been typed in yet. Such an agent sits at its own prompt but
   * has not started its task, so it must not read as waiting (triggers would fire early).
   */
  promptPending?: boolean;
  /** Settles once the exit has been written to the manifest (never rejects). */
  exitRecorded: Promise<void>;
  /** Why the exit could not be written to the manifest (e.g. a read-only or full disk), once it failed. */
  exitRecordError?: unknown;
  /** Settles once the request that started the process has written (or abandoned) its manifest entry. */
  entryWritten: Promise<void>;
}

/** Emitted on `state.events` as "agent_status" whenever an agent's effective status changes. */
export interface AgentStatusChange {
  projectRoot: string;
  agentId: string;
  from: AgentStatus | null;
  to: AgentStatus;
}

/** Everything the request handlers share: one instance per daemon. */
export class EngineState {
  readonly store = new ManifestStore();
  /** `$PU_HOME/trust.json`: project content allowed to run commands. */
  readonly trust: TrustStore;
  /** Keyed by agent id (ids are unique across projects, so logs/attach need no project). */
  readonly sessions = new Map<string, LiveAgent>();
  /** "agent_status" (AgentStatusChange). The trigger runner listens here. */
  readonly events = new EventEmitter();
  readonly startedAt = Date.now();
  readonly statusWatch: StatusWatch;
  /** Agents a resume request is starting right now (one resume at a time per agent). */
  readonly resuming = new Set<string>();
  /** True once shutdown began: no new agents may start. */
  stopping = false;
  /**
   * One per open attach or status stream: says, on its connection, that the daemon is
   * stopping. Without it a viewer sees only a dropped connection and cannot tell a crash
   * (agent fate unknown) from a stop (agent suspended, `pu play` brings it back).
   */
  readonly shutdownNotices = new Set<() => void>();
  /** Set by the daemon: begins the shutdown sequence (after the current reply is sent). */
  requestShutdown: () => void = () => undefined;
  /** Set by the daemon once started (trigger-runner.ts); absent while recovering. */
  triggers?: TriggerRunner;
  /** Set by the daemon once started (scheduler.ts). */
  scheduler?: Scheduler;

  constructor(
    readonly home: string,
    readonly projects: ProjectRegistry,
    readonly log: DaemonLog,
  ) {
    this.statusWatch = new StatusWatch(this);
    this.trust = new TrustStore(home);
    // The trigger runner may not be attached yet; an emitter with no listener is fine, a throwing one is not.
    this.events.setMaxListeners(100);
  }

  /**
   * Resolves a request's projectRoot and checks it is a pu project; remembers it for recovery.
   * NOT_INITIALIZED when `.pu/manifest.json` is missing.
   */
  async project(rawRoot: string): Promise<string> {
    const root = path.resolve(rawRoot);
    if (!fs.existsSync(manifestPath(root))) {
      throw new PuError("NOT_INITIALIZED", `no pu project at ${root}; run \`pu init\``);
    }
    await this.rememberProject(root);
    return root;
  }

  async rememberProject(root: string): Promise<void> {
    try {
      await this.projects.add(root);
    } catch (err) {
      // Losing the registry entry only weakens recovery; it must not fail the request.
      this.log.event("projects_write_failed", { projectRoot: root, error: err });
    }
  }

  /** Every manifest write by the daemon goes through here so status subscribers hear about it. */
  async updateManifest<T>(root: string, fn: (m: Manifest) => T | Promise<T>): Promise<T> {
    const result = await this.store.update(root, fn);
    this.statusWatch.manifestWritten(root);
    return result;
  }

  liveAgentsOf(root: string): LiveAgent[] {
    return [...this.sessions.values()].filter((a) => a.projectRoot === root);
  }

  /** Holds a PTY that is still running (not merely exited output kept for logs/attach). */
  isRunning(agentId: string): boolean {
    const live = this.sessions.get(agentId);
    return live !== undefined && live.session.exitCode === null;
  }
}

/** The agent's entry, for mutation inside an updateManifest callback. */
export function agentIn(m: Manifest, agentId: string): { agent: AgentEntry; worktree?: WorktreeEntry } {
  const found = findAgent(m, agentId);
  if (!found) throw new PuError("AGENT_NOT_FOUND", `no agent ${agentId} in ${m.projectRoot}`);
  return found;
}

/** A worktree by id or (unique) name. */
export function worktreeIn(m: Manifest, idOrName: string): WorktreeEntry {
  const byId = Object.hasOwn(m.worktrees, idOrName) ? m.worktrees[idOrName] : undefined;
  if (byId) return byId;
  const byName = Object.values(m.worktrees).filter((w) => w.name === idOrName && w.status !== "cleaned");
  if (byName.length === 1 && byName[0]) return byName[0];
  if (byName.length > 1) {
    throw new PuError("INVALID_ARGUMENT", `several worktrees are named ${idOrName}; use an id (${byName.map((w) => w.id).join(", ")})`);
  }
  throw new PuError("WORKTREE_NOT_FOUND", `no worktree ${idOrName} in ${m.projectRoot}`);
}

export function nowIso(): string {
  return new Date().toISOString();
}

export interface SessionPlacement {
  agentId: string;
  projectRoot: string;
  worktreeId?: string;
  agentType: string;
  cwd: string;
  session: AgentSession;
  idleThresholdSeconds: number;
}

/**
 * Takes ownership of a freshly started session: it becomes visible to logs/attach/status,
 * its status is watched, and its exit is recorded in the manifest. Call `entryReady()`
 * once the manifest holds the agent's entry (or will never hold it).
 */
export function registerSession(state: EngineState, placement: SessionPlacement): { live: LiveAgent; entryReady: () => void } {
  let entryReady!: () => void;
  const entryWritten = new Promise<void>((resolve) => (entryReady = resolve));
  const live: LiveAgent = { ...placement, entryWritten, exitRecorded: Promise.resolve() };
  live.exitRecorded = new Promise<void>((resolve) => {
    live.session.onExit((exitCode) => {
      void recordExit(state, live, exitCode).finally(resolve);
    });
  });
  const previous = state.sessions.get(live.agentId);
  if (previous) state.statusWatch.untrack(previous.agentId);
  state.sessions.set(live.agentId, live);
  state.statusWatch.track(live);
  return { live, entryReady };
}

/** Forgets a session (its ring included): after clean, a second kill, or a resume replacing it. */
/** Has the stream's connection sent `notice()` when the daemon begins to stop, for as long as it is open. */
export function noticeOnShutdown(state: EngineState, ctx: ConnectionContext, notice: () => NoticeEvent): void {
  const send = () => void ctx.send(notice());
  state.shutdownNotices.add(send);
  ctx.onClose(() => state.shutdownNotices.delete(send));
}

export function dropSession(state: EngineState, agentId: string): void {
  state.statusWatch.untrack(agentId);
  state.sessions.delete(agentId);
}

/**
 * Writes an exit to the manifest. A stop for suspend/shutdown keeps the agent resumable
 * (suspended, waiting); anything else (its own exit, kill, clean) makes it broken.
 */
async function recordExit(state: EngineState, live: LiveAgent, exitCode: number): Promise<void> {
  await live.entryWritten;
  state.log.event("exit", { projectRoot: live.projectRoot, agentId: live.agentId, exitCode, intent: live.stopIntent ?? "natural" });
  if (await writeExit(state, live, exitCode)) return;
  // The disk may come back (read-only remount undone, space freed): keep trying, more and
  // more slowly, so the manifest stops calling a dead process alive without a restart.
  // Live status meanwhile comes from the process itself (see status-watch).
  let delayMs = EXIT_RECORD_RETRY_FIRST_MS;
  const retry = () => {
    if (state.stopping || state.sessions.get(live.agentId) !== live) return;
    void writeExit(state, live, exitCode).then((written) => {
      if (written) {
        live.exitRecordError = undefined;
        state.log.event("exit_recorded_on_retry", { projectRoot: live.projectRoot, agentId: live.agentId });
        return;
      }
      delayMs = Math.min(delayMs * 2, EXIT_RECORD_RETRY_MAX_MS);
      setTimeout(retry, delayMs).unref();
    });
  };
  setTimeout(retry, delayMs).unref();
}

const EXIT_RECORD_RETRY_FIRST_MS = 1000;
const EXIT_RECORD_RETRY_MAX_MS = 60_000;

/** One attempt at writing an exit; false (with `exitRecordError` set) when the manifest cannot be written. */
async function writeExit(state: EngineState, live: LiveAgent, exitCode: number): Promise<boolean> {
  const intent = live.stopIntent;
  const suspended = intent === "suspend" || intent === "shutdown";
  try {
    await state.updateManifest(live.projectRoot, (m) => {
      const found = findAgent(m, live.agentId);
      if (!found) return;
      const agent = found.agent;
      // A newer process (resume) may own the entry by now; its pid differs.
      if (agent.pid !== undefined && agent.pid !== live.session.pid) return;
      const stamp = nowIso();
      if (suspended) {
        agent.status = "waiting";
        agent.suspended = true;
        agent.suspendedAt = stamp;
        delete agent.exitCode;
        delete agent.completedAt;
      } else {
        agent.status = "broken";
        agent.exitCode = exitCode;
        agent.completedAt = stamp;
        delete agent.suspended;
        delete agent.suspendedAt;
      }
    });
  } catch (err) {
    live.exitRecordError = err;
    state.log.event("exit_record_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error: err });
    return false;
  }
  return true;
}

/** Which known project's manifest holds `agentId` (for requests that carry no projectRoot). */
async function locateAgent(state: EngineState, agentId: string): Promise<AgentEntry | undefined> {
  for (const root of state.projects.list()) {
    try {
      const found = listAgents(await state.store.read(root)).find(({ agent }) => agent.id === agentId);
      if (found) return found.agent;
    } catch {
      // an unreadable project cannot hold the answer
    }
  }
  return undefined;
}

/** The session holding an agent's output; AGENT_NOT_FOUND saying why when there is none. */
/** What a request that needs a running process says about a benched agent (`pu play` brings it back). */
export function benchedAgentMessage(agentId: string): string {
  return `${agentId} is benched (suspended); \`pu play ${agentId}\` resumes it`;
}

/**
 * `explainBenched`: for requests that need the process itself (input), a benched agent whose
 * output the daemon no longer holds is explained as benched, not as missing.
 */
export async function requireSession(state: EngineState, agentId: string, { explainBenched = false } = {}): Promise<LiveAgent> {
  const live = state.sessions.get(agentId);
  if (live) return live;
  const entry = await locateAgent(state, agentId);
  if (entry?.suspended && explainBenched) throw new PuError("INVALID_STATE", benchedAgentMessage(agentId));
  if (entry) throw new PuError("AGENT_NOT_FOUND", `no output held for ${agentId} (the daemon has restarted since it ran)`);
  throw new PuError("AGENT_NOT_FOUND", `no agent ${agentId} in any project this daemon knows`);
}
