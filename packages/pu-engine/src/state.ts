import fs from "node:fs";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { findAgent, type AgentEntry, type Manifest, type WorktreeEntry } from "@pu/core/manifest";
import { ManifestStore } from "@pu/core/manifest-store";
import { manifestPath } from "@pu/core/paths";
import type { NoticeEvent } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { LiveAgent } from "./session/live-agent.js";
import type { DaemonLog } from "./daemon-log.js";
import { EngineEvents } from "./engine-events.js";
import type { ProjectRegistry } from "./projects.js";
import { TrustStore } from "./trust-store.js";
import { LaunchSeals } from "./launch-seals.js";

/** Everything the request handlers share: one instance per daemon. */
export class EngineState {
  readonly store = new ManifestStore();
  /** `$PU_HOME/trust.json`: project content allowed to run commands. */
  readonly trust: TrustStore;
  /** `$PU_HOME/launch-seal.key`: seals an agent's own command and variables in the manifest. */
  readonly launchSeals: LaunchSeals;
  /** Keyed by agent id (ids are unique across projects, so logs/attach need no project). */
  readonly sessions = new Map<string, LiveAgent>();
  /** What happens to agents and projects; the services built in daemon.ts listen here. */
  readonly events: EngineEvents;
  readonly startedAt = Date.now();
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

  constructor(
    readonly home: string,
    readonly projects: ProjectRegistry,
    readonly log: DaemonLog,
  ) {
    this.trust = new TrustStore(home);
    this.launchSeals = new LaunchSeals(home);
    this.events = new EngineEvents((event, error) => log.event("listener_error", { event, error }));
  }

  /** Has the stream's connection sent `notice()` when the daemon begins to stop, for as long as it is open. */
  noticeOnShutdown(ctx: ConnectionContext, notice: () => NoticeEvent): void {
    const send = () => void ctx.send(notice());
    this.shutdownNotices.add(send);
    ctx.onClose(() => this.shutdownNotices.delete(send));
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
    this.events.emit("manifest_changed", { projectRoot: root });
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

/** Refuses a new start once shutdown began (the sessions to stop are being listed). */
export function refuseWhileStopping(state: EngineState): void {
  if (state.stopping) throw new PuError("INVALID_STATE", "the pu daemon is shutting down; try again in a moment");
}

export function nowIso(): string {
  return new Date().toISOString();
}


