/**
 * The engine's typed event bus. Services that react to what happens to agents and
 * projects (status watch, triggers, schedules, and the orchestration to come)
 * subscribe here instead of being called by the code that made it happen, so the
 * launcher, the registry and the handlers need not know who listens.
 *
 * Delivery is synchronous and in subscription order, like EventEmitter's: a listener
 * sees the event before `emit` returns. A listener that throws is logged and skipped;
 * it never breaks the emitter or the other listeners.
 */
import type { AgentEntry, AgentStatus } from "@pu/core/manifest";
import type { DefinitionKind } from "@pu/core/definitions";
import type { FinishedBy, LiveAgent, StopIntent } from "./session/live-agent.js";

export interface EngineEventMap {
  /** A session joined the registry (start or resume); its manifest entry may not be written yet. */
  agent_registered: { live: LiveAgent };
  /**
   * An agent's process runs and its manifest entry is written. `firstTurn` settles when the
   * spawn prompt has been typed and the agent answered it (absent when nothing was typed).
   */
  agent_started: {
    projectRoot: string;
    agentId: string;
    agentType: string;
    model?: string;
    pid: number;
    resumed: boolean;
    live: LiveAgent;
    entry: AgentEntry;
    firstTurn?: Promise<unknown>;
  };
  /** The spawn prompt is typed in (or could not be): the agent's status may change now. */
  agent_prompt_delivered: { live: LiveAgent };
  /** A plan session entered a phase (orchestration/plans). */
  plan_phase: { projectRoot: string; sessionId: string; phase: string };
  /** The agent's CLI reported a turn state through its hook (`pu signal`). */
  agent_turn_signal: { live: LiveAgent };
  /** The agent's effective status changed (status-watch computes it). */
  agent_status: AgentStatusChange;
  /** The process exited and the exit is in the manifest (or writing it failed and is being retried). */
  agent_exit: {
    projectRoot: string;
    agentId: string;
    exitCode: number;
    durationMs: number;
    agentType: string;
    model?: string;
    /** Why the daemon stopped it; undefined when it exited on its own. */
    intent?: StopIntent;
    /** pu's orchestrator stopped it because its part was done: a success, whatever the exit code. */
    finishedBy?: FinishedBy;
  };
  /** The daemon let go of the session (and its output): a second kill, clean, or a resume replacing it. */
  agent_released: { agentId: string };
  /** The daemon wrote a project's manifest. */
  manifest_changed: { projectRoot: string };
  /** A definition was saved, deleted or toggled through pu. */
  definition_changed: { projectRoot?: string; kind: DefinitionKind; name: string };

  /** An agent was bound to a trigger by request (it may be waiting already). */
  trigger_assigned: { projectRoot: string; agentId: string };
  /** `pu init` made a new project known. */
  project_added: { projectRoot: string };
  /** `pu trust` recorded a project's items as trusted (held tickets may start now). */
  project_trusted: { projectRoot: string; keys: string[] };
  /** Something happened to a work-queue ticket (state.json is written by then). */
  ticket_changed: TicketChange;
  /** The queue was paused or resumed. */
  queue_paused: { paused: boolean };
  /** A multi-agent group changed (state.json is written by then). */
  group_changed: GroupChange;
}

interface GroupChange {
  projectRoot: string;
  groupId: string;
  phase: string;
  kind: "created" | "member_launched" | "member_finished" | "phase";
  variant?: string;
  agentId?: string;
}

interface TicketChange {
  projectRoot: string;
  ticketId: string;
  kind: "dispatched" | "step_started" | "awaiting_input" | "done" | "failed" | "cancelled";
  step?: string;
  agentId?: string;
  message?: string;
}

export interface AgentStatusChange {
  projectRoot: string;
  agentId: string;
  from: AgentStatus | null;
  to: AgentStatus;
}

export type EngineEventName = keyof EngineEventMap;
type Listener<K extends EngineEventName> = (event: EngineEventMap[K]) => void;

export class EngineEvents {
  private readonly listeners = new Map<EngineEventName, Set<Listener<never>>>();

  constructor(private readonly onListenerError: (event: EngineEventName, err: unknown) => void) {}

  /** Subscribes; returns the unsubscribe function. */
  on<K extends EngineEventName>(name: K, listener: Listener<K>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    const stored = listener as Listener<never>;
    set.add(stored);
    return () => set.delete(stored);
  }

  emit<K extends EngineEventName>(name: K, event: EngineEventMap[K]): void {
    const set = this.listeners.get(name);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<K>)(event);
      } catch (err) {
        this.onListenerError(name, err);
      }
    }
  }
}
