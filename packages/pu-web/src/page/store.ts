// What the page knows of the daemon: every project's latest status report, kept current by the
// server's status socket (one snapshot, then each event), and a tick for "state.json changed"
// that the queue, groups, plans and usage views re-ask on.
import type { AgentView, StatusReport, WorktreeView } from "@pu/ipc/protocol";
import { isSignedOut, openSocket, sessionStillValid } from "./api.js";

interface ProjectState {
  root: string;
  report: StatusReport | null;
  error: string | null;
}

type ServerEvent =
  | { type: "projects"; projects: ProjectState[] }
  | { type: "project"; project: ProjectState }
  | { type: "status"; root: string; report: StatusReport }
  | { type: "changed"; what: "state" };

interface AgentPlace {
  project: string;
  worktree: WorktreeView | null;
  agent: AgentView;
}

class Store {
  readonly projects = new Map<string, ProjectState>();
  connected = false;
  /** Set once the first snapshot arrived (notifications only for waits that start after it). */
  loaded = false;
  private readonly statusListeners = new Set<() => void>();
  private readonly stateListeners = new Set<() => void>();
  private retryMs = 250;

  connect(): void {
    const ws = openSocket("/ws/status");
    ws.onmessage = (message) => this.receive(JSON.parse(String(message.data)) as ServerEvent);
    ws.onopen = () => {
      this.connected = true;
      this.retryMs = 250;
    };
    ws.onclose = () => {
      this.connected = false;
      this.emitStatus();
      // A refused upgrade looks like any other close to a page: the server says which it was.
      void sessionStillValid().then((valid) => {
        if (!valid || isSignedOut()) return;
        setTimeout(() => this.connect(), this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, 5000);
      });
    };
  }

  onStatus(listener: () => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  onStateChanged(listener: () => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  roots(): string[] {
    return [...this.projects.keys()].sort();
  }

  agents(): AgentPlace[] {
    const out: AgentPlace[] = [];
    for (const { root, report } of this.projects.values()) {
      if (!report) continue;
      for (const agent of Object.values(report.agents)) out.push({ project: root, worktree: null, agent });
      for (const wt of Object.values(report.worktrees)) for (const agent of Object.values(wt.agents)) out.push({ project: root, worktree: wt, agent });
    }
    return out;
  }

  findAgent(agentId: string): AgentPlace | undefined {
    return this.agents().find((place) => place.agent.id === agentId);
  }

  private receive(event: ServerEvent): void {
    if (event.type === "projects") {
      this.projects.clear();
      for (const project of event.projects) this.projects.set(project.root, project);
      this.loaded = true;
    } else if (event.type === "project") {
      this.projects.set(event.project.root, event.project);
    } else if (event.type === "status") {
      this.projects.set(event.root, { root: event.root, report: event.report, error: null });
    } else {
      for (const listener of this.stateListeners) listener();
      return;
    }
    this.emitStatus();
  }

  private emitStatus(): void {
    for (const listener of this.statusListeners) listener();
  }
}

export const store = new Store();
