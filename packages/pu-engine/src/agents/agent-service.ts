/**
 * A person's requests about agents that exist: resume (`pu play`), input and typed text
 * (`pu send`), output (`pu logs`), window size, names (`pu rename`), kill and suspend
 * (`pu bench`). Kill and suspend name
 * their agents the same way (an id, or a sweep over the project) and skip the same kinds
 * of agent (the caller, one not running, one already gone, one the orchestrator owns), so
 * the target rules live here once; the handlers only shape the reply.
 */
import { submitPauseMs } from "@pu/core/agent-types";
import { PuError } from "@pu/core/errors";
import { findAgent, listAgents, type AgentEntry, type AgentLocation, type Manifest } from "@pu/core/manifest";
import { normalizeWorktreeName, validateAgentName } from "@pu/core/names";
import type { AttachResult, KillResult, LogsResult, RequestOf, ResultOf, ScreenView, SuspendResult } from "@pu/ipc/protocol";
import type { ViewerSink } from "../session/ring-viewer.js";
import { sessionReadiness } from "../session/live-agent.js";
import type { ScreenModel } from "../session/screen-model.js";
import type { LiveAgent } from "../session/live-agent.js";
import type { EngineState } from "../state.js";
import { resumeAgent } from "./launcher.js";
import { typeText } from "./launch-command.js";
import { ownedNote, type OwnedWork } from "./owners.js";
import { benchedAgentMessage, dropSession, requireSession } from "./registry.js";
import { stopAgents, throwIfUnrecorded } from "./stop.js";
import { noteTurnSignal } from "./turn.js";

/** What a kill or suspend names: one agent, one worktree's agents, every worktree's, or all. */
interface AgentTargets {
  /** One agent by id (refused rather than skipped when it cannot be acted on). */
  direct: boolean;
  agents: AgentLocation[];
}

/** Kill takes an agent, a worktree, `worktrees` or `all`; suspend an agent or `all`. */
function agentTargets(m: Manifest, target: string, accepts: "agents" | "agents-and-worktrees"): AgentTargets {
  const all = listAgents(m);
  if (target === "all") return { direct: false, agents: all };
  if (accepts === "agents-and-worktrees") {
    if (target === "worktrees") return { direct: false, agents: all.filter((a) => a.worktree) };
    if (Object.hasOwn(m.worktrees, target)) return { direct: false, agents: all.filter((a) => a.worktree?.id === target) };
  }
  const agent = all.find((a) => a.agent.id === target);
  if (agent) return { direct: true, agents: [agent] };
  if (accepts === "agents") throw new PuError("AGENT_NOT_FOUND", `no agent ${target} in ${m.projectRoot}`);
  if (target.startsWith("wt-")) throw new PuError("WORKTREE_NOT_FOUND", `no worktree ${target} in ${m.projectRoot}`);
  throw new PuError("AGENT_NOT_FOUND", `no agent or worktree ${target} in ${m.projectRoot}`);
}

interface Skip {
  agentId: string;
  reason: string;
  owner?: { kind: "ticket" | "group" | "plan"; id: string };
}

/** Why an agent a sweep (or an id) names is left alone, or undefined to stop it. */
type SkipRule = (agent: AgentEntry, live: LiveAgent | undefined) => Omit<Skip, "agentId"> | undefined;

export interface KillRequest {
  target: string;
  callerAgentId?: string | undefined;
  exclude?: readonly string[] | undefined;
}

export interface SuspendRequest {
  target: string;
  callerAgentId?: string | undefined;
}

export class AgentService {
  constructor(private readonly state: EngineState) {}

  /** `pu play`: restarts a suspended agent with its type's resume command, in the same directory. */
  resume(root: string, agentId: string): Promise<AgentEntry> {
    return resumeAgent(this.state, root, agentId);
  }

  /** Raw bytes into the agent's terminal, exactly as given (keys, Enter, control codes). */
  async input(agentId: string, data: Buffer): Promise<number> {
    (await this.runningSession(agentId)).session.write(data);
    return data.length;
  }

  /** Text typed the way the agent's CLI takes it: one paste where it asked for bracketed paste, Enter as its own key after the type's pause. */
  async typeText(agentId: string, text: string, submit: boolean): Promise<number> {
    const live = await this.runningSession(agentId);
    const written = await typeText(live.session, text, { submit, submitPauseMs: submitPauseMs(live.agentType) });
    if (!written) throw new PuError("INVALID_STATE", `${agentId} exited while the text was typed`);
    return Buffer.byteLength(text) + (submit ? 1 : 0);
  }

  /** The output the daemon still holds for an agent: raw bytes as the PTY wrote them (all, or the last `tail`), or the rendered screen. */
  async output(agentId: string, req: { screen?: boolean | undefined; tail?: number | undefined }): Promise<LogsResult> {
    const { session } = await requireSession(this.state, agentId);
    let result: LogsResult;
    if (req.screen) {
      // Output still queued for the screen model is parsed first: the reply shows everything received.
      await session.screen.settle();
      result = { data: new Uint8Array(0), offset: session.ring.endOffset, endOffset: session.ring.endOffset, exited: session.exitCode !== null, screen: screenView(session.screen) };
    } else {
      const slice = req.tail === undefined ? session.ring.read() : session.ring.tail(req.tail);
      result = { data: slice.data, offset: slice.offset, endOffset: session.ring.endOffset, exited: session.exitCode !== null };
    }
    if (session.exitCode !== null) result.exitCode = session.exitCode;
    return result;
  }

  /**
   * A viewer of the agent's terminal: replay from `fromOffset` (or as far back as the ring
   * holds), then live output, at the sink's own pace. `viewerId` names it for window sizes;
   * `detach` closes it and drops its size.
   */
  async attach(agentId: string, fromOffset: number | undefined, viewerId: number, sink: ViewerSink): Promise<{ result: Omit<AttachResult, "agentId">; running: () => boolean; detach: () => void }> {
    const { session } = await requireSession(this.state, agentId);
    // The viewer starts sending on the next turn, after the reply has been queued.
    const viewer = session.addViewer(fromOffset, sink);
    const result: Omit<AttachResult, "agentId"> = {
      offset: viewer.startOffset,
      endOffset: session.ring.endOffset,
      cols: session.cols,
      rows: session.rows,
      exited: session.exitCode !== null,
    };
    if (session.exitCode !== null) result.exitCode = session.exitCode;
    return {
      result,
      running: () => session.exitCode === null,
      detach: () => {
        viewer.close();
        session.dropViewerSize(viewerId);
      },
    };
  }

  /**
   * A turn state reported by the agent's own CLI through its hook (`pu signal`): it wins over
   * what the screen suggests until the next Enter reaches the agent.
   */
  async signal(agentId: string, kind: RequestOf<"agent_signal">["signal"]): Promise<ResultOf<"agent_signal">> {
    const live = await requireSession(this.state, agentId);
    if (live.session.exitCode !== null) throw new PuError("INVALID_STATE", `${agentId} has exited; its signals no longer count`);
    noteTurnSignal(this.state, live, kind);
    const readiness = sessionReadiness(live);
    return { agentId, status: readiness.status, ...(readiness.waitingReason ? { waitingReason: readiness.waitingReason } : {}) };
  }

  /** Records one viewer's window size; the PTY takes the smallest. Returns the size it now has. */
  async resize(agentId: string, viewerId: number, cols: number, rows: number): Promise<{ cols: number; rows: number }> {
    const { session } = await requireSession(this.state, agentId);
    session.setViewerSize(viewerId, cols, rows);
    return { cols: session.cols, rows: session.rows };
  }

  /**
   * Renames an agent (free text) or a worktree. A worktree's name is only its display
   * name: its branch keeps the name it was created with.
   */
  rename(root: string, target: string, newName: string): Promise<{ target: string; name: string }> {
    return this.state.updateManifest(root, (m) => {
      const wt = Object.hasOwn(m.worktrees, target) ? m.worktrees[target] : undefined;
      if (wt) {
        const name = normalizeWorktreeName(newName);
        const clash = Object.values(m.worktrees).find((w) => w.id !== wt.id && w.name === name && w.status !== "cleaned");
        if (clash) throw new PuError("INVALID_ARGUMENT", `worktree ${clash.id} is already named ${name}`);
        wt.name = name;
        return { target: wt.id, name };
      }
      const found = findAgent(m, target);
      if (!found) throw new PuError(target.startsWith("wt-") ? "WORKTREE_NOT_FOUND" : "AGENT_NOT_FOUND", `no agent or worktree ${target} in ${root}`);
      found.agent.name = validateAgentName(newName);
      return { target: found.agent.id, name: found.agent.name };
    });
  }

  /** The agent's session, refused with the reason when it takes no input (benched, or exited). */
  private async runningSession(agentId: string): Promise<LiveAgent> {
    const live = await requireSession(this.state, agentId, { explainBenched: true });
    const { session } = live;
    if (session.exitCode !== null && live.stopIntent === "suspend") throw new PuError("INVALID_STATE", benchedAgentMessage(agentId));
    if (session.exitCode !== null) throw new PuError("INVALID_STATE", `${agentId} has exited (code ${session.exitCode}); it takes no input`);
    return live;
  }

  /**
   * Kills what `target` names. `owners` (absent with --force) is the work a running ticket,
   * group or plan owns: refused when named, skipped by a sweep.
   */
  async kill(root: string, req: KillRequest, owners: OwnedWork | undefined): Promise<KillResult> {
    const m = await this.state.store.read(root);
    const { direct, agents } = agentTargets(m, req.target, "agents-and-worktrees");
    refuseCaller(direct, req, "kill");
    const namedWorktree = Object.hasOwn(m.worktrees, req.target) ? m.worktrees[req.target] : undefined;
    const namedOwner = direct ? owners?.agent(req.target) : namedWorktree ? owners?.worktree(namedWorktree) : undefined;
    if (namedOwner) throw new PuError("INVALID_STATE", `refusing to kill ${req.target}: it is ${ownedNote(namedOwner)}`);
    const excluded = new Set(req.exclude ?? []);
    if (req.callerAgentId) excluded.add(req.callerAgentId);

    const { skipped, toStop } = this.sortOut(agents, [
      (agent) => (!direct && excluded.has(agent.id) ? { reason: "excluded" } : undefined),
      (agent, live) => (!live ? { reason: agent.suspended ? "suspended (not running)" : "not running" } : undefined),
      // Benched by this daemon: its exited session stays (its output for logs), and the exit code
      // is the bench's hang-up, not how the agent ended.
      (agent, live) => (live && live.session.exitCode !== null && (agent.suspended || live.stopIntent === "suspend") ? { reason: "suspended (not running)" } : undefined),
      (agent, live) => {
        if (live?.session.exitCode === null || live === undefined) return undefined;
        // Killed again: the output of a process that is long gone is let go, once its exit is
        // in the manifest (until then the session is what knows it exited, and retries the write).
        if (live.exitRecordError === undefined) dropSession(this.state, agent.id);
        return { reason: `already exited (code ${live.session.exitCode})` };
      },
      (agent) => {
        const owner = owners?.agent(agent.id);
        return owner ? { reason: ownedNote(owner), owner: { kind: owner.kind, id: owner.id } } : undefined;
      },
    ]);
    const { stopped } = await stopAgents(toStop, "kill");
    this.state.log.event("kill", { projectRoot: root, target: req.target, killed: stopped });
    throwIfUnrecorded(toStop);
    if (req.target !== "worktrees") return { killed: stopped, skipped };
    const rootAgentsLeft = listAgents(m).filter((a) => !a.worktree && this.state.isRunning(a.agent.id) && !owners?.agent(a.agent.id)).length;
    return { killed: stopped, skipped, rootAgentsLeft };
  }

  /** `pu bench`: stops agents so they can be resumed later; nothing about them is forgotten. */
  async suspend(root: string, req: SuspendRequest): Promise<SuspendResult> {
    const m = await this.state.store.read(root);
    const { direct, agents } = agentTargets(m, req.target, "agents");
    refuseCaller(direct, req, "suspend");
    const { skipped, toStop } = this.sortOut(agents, [
      (agent) => (!direct && agent.id === req.callerAgentId ? { reason: "calling agent" } : undefined),
      (agent) => (agent.suspended ? { reason: "already suspended" } : undefined),
      (_agent, live) => (!live || live.session.exitCode !== null ? { reason: "not running" } : undefined),
    ]);
    if (direct && toStop.length === 0 && skipped[0]) {
      throw new PuError("INVALID_STATE", `${req.target} cannot be suspended: ${skipped[0].reason}`);
    }
    const { stopped } = await stopAgents(toStop, "suspend");
    this.state.log.event("suspend", { projectRoot: root, agents: stopped.map((s) => s.agentId) });
    throwIfUnrecorded(toStop);
    return { suspended: stopped.map((s) => s.agentId), skipped };
  }

  /** Each agent either skipped (the first rule that applies says why) or to be stopped. */
  private sortOut(agents: AgentLocation[], rules: SkipRule[]): { skipped: Skip[]; toStop: LiveAgent[] } {
    const skipped: Skip[] = [];
    const toStop: LiveAgent[] = [];
    for (const { agent } of agents) {
      const live = this.state.sessions.get(agent.id);
      let skip: Omit<Skip, "agentId"> | undefined;
      for (const rule of rules) {
        skip = rule(agent, live);
        if (skip) break;
      }
      if (skip) skipped.push({ agentId: agent.id, ...skip });
      else if (live) toStop.push(live);
    }
    return { skipped, toStop };
  }
}

function screenView(screen: ScreenModel): ScreenView {
  const snap = screen.snapshot();
  return {
    cols: snap.cols,
    rows: snap.rows,
    lines: snap.lines,
    cursor: snap.cursor,
    alternateScreen: snap.alternateScreen,
    title: snap.title,
    contentHash: snap.contentHash,
    lastContentChange: snap.lastContentChange === null ? null : new Date(snap.lastContentChange).toISOString(),
    skippedBytes: snap.skippedBytes,
  };
}

/** An agent may not stop itself by id (a sweep skips it instead). */
function refuseCaller(direct: boolean, req: { target: string; callerAgentId?: string | undefined }, verb: "kill" | "suspend"): void {
  if (direct && req.callerAgentId === req.target) throw new PuError("INVALID_ARGUMENT", `refusing to ${verb} the calling agent ${req.target}`);
}
