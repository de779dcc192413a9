// The web server's side of the daemon: one connection that holds a `subscribe_status` stream
// per project the daemon knows (so the page's agent list is live without polling), answers
// the page's requests from an allow-list, and tells the server when the daemon goes away
// (the server then stops: `pu daemon stop` ends `pu web` too).
import { watch, type FSWatcher } from "node:fs";
import { isPuError } from "@pu/core/errors";
import { socketPath } from "@pu/core/paths";
import { connectClient, type Client } from "@pu/ipc/client";
import type { RequestFields, RequestType, ResultOf, StatusEvent, StatusReport } from "@pu/ipc/protocol";
import type { EventLog } from "@pu/core/event-log";

const CLIENT_NAME = "pu-web";

/** The daemon requests the page may make (everything else is refused before the daemon sees it). */
const PAGE_REQUESTS = [
  "status",
  "spawn",
  "type_text",
  "kill",
  "suspend",
  "resume",
  "diff",
  "merge",
  "clean",
  "ticket_create",
  "ticket_list",
  "queue_status",
  "queue_pause",
  "queue_resume",
  "review_list",
  "review_approve",
  "review_reject",
  "group_list",
  "group_status",
  "group_diff",
  "group_pick",
  "plan_list",
  "plan_status",
  "plan_evidence",
  "plan_approve",
  "plan_cancel",
  "stats",
  "usage",
  "host_list",
] as const satisfies readonly RequestType[];
export type PageRequest = (typeof PAGE_REQUESTS)[number];

export function isPageRequest(type: string): type is PageRequest {
  return (PAGE_REQUESTS as readonly string[]).includes(type);
}

/**
 * Fields the page may not set, though the CLI may: the page spawns the project's agent types
 * (trusted with its config), never a command line, extra arguments, environment or yolo flags
 * of its own, so no spawn from the page starts a program the project's config does not name.
 * That is not a sandbox: a session can still type into the person's terminals and agents, as
 * the person at a terminal can, which is why the session needs the cookie and the key.
 * `callerAgentId` says which agent is asking (an agent running pu); a page is never one.
 */
const FIELDS_NOT_FROM_THE_PAGE: Partial<Record<PageRequest, readonly string[]>> = {
  spawn: ["command", "extraArgs", "env", "yolo", "files"],
};
const FIELDS_NEVER_FROM_THE_PAGE = ["callerAgentId"];

export function fieldNotFromThePage(type: PageRequest, fields: Record<string, unknown>): string | undefined {
  return [...FIELDS_NEVER_FROM_THE_PAGE, ...(FIELDS_NOT_FROM_THE_PAGE[type] ?? [])].find((name) => name in fields);
}

export interface ProjectState {
  root: string;
  report: StatusReport | null;
  /** Why this project has no live status (its manifest is gone or unreadable). */
  error: string | null;
}

export type BridgeEvent =
  | { type: "status"; root: string; report: StatusReport; changed: StatusEvent["changed"] }
  | { type: "project"; project: ProjectState }
  /** `$PU_HOME/state.json` changed (tickets, reviews, groups, usage): open views re-ask. */
  | { type: "changed"; what: "state" };

export class DaemonBridge {
  private readonly states = new Map<string, ProjectState>();
  private readonly listeners = new Set<(event: BridgeEvent) => void>();
  private watcher: FSWatcher | undefined;
  private timers = new Map<string, NodeJS.Timeout>();
  private closing = false;
  /** Resolves with why, once the daemon is gone (connection closed or shutdown notice). */
  readonly lost: Promise<string>;
  private markLost!: (why: string) => void;

  private constructor(
    private readonly home: string,
    private readonly client: Client,
    private readonly log: EventLog,
  ) {
    this.lost = new Promise((resolve) => (this.markLost = resolve));
    void client.closed.then(() => this.markLost("the connection to the pu daemon closed"));
  }

  static async connect(home: string, log: EventLog): Promise<DaemonBridge> {
    const client = await connectClient({ socketPath: socketPath(home), clientName: CLIENT_NAME });
    const bridge = new DaemonBridge(home, client, log);
    await bridge.refreshProjects();
    bridge.watchHome();
    return bridge;
  }

  get daemonPid(): number {
    return this.client.daemon.pid;
  }

  projects(): ProjectState[] {
    return [...this.states.values()].sort((a, b) => (a.root < b.root ? -1 : a.root > b.root ? 1 : 0));
  }

  on(listener: (event: BridgeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  request<T extends PageRequest>(type: T, fields: RequestFields<T>): Promise<ResultOf<T>> {
    return this.client.request(type, fields);
  }

  /** A connection of its own for one terminal viewer: the daemon sizes the PTY per connection. */
  viewerConnection(): Promise<Client> {
    return connectClient({ socketPath: socketPath(this.home), clientName: `${CLIENT_NAME}-viewer` });
  }

  close(): void {
    this.closing = true;
    this.watcher?.close();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.client.close();
  }

  /** Subscribes to every project the daemon knows and does not yet watch. */
  async refreshProjects(): Promise<void> {
    const health = await this.client.request("health", {});
    await Promise.all(health.projects.filter((root) => !this.states.has(root)).map((root) => this.subscribe(root)));
  }

  private emit(event: BridgeEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private async subscribe(root: string): Promise<void> {
    const state: ProjectState = { root, report: null, error: null };
    this.states.set(root, state);
    let stream;
    try {
      stream = await this.client.openStream("subscribe_status", { projectRoot: root });
    } catch (error) {
      state.error = isPuError(error) ? error.message : String(error);
      this.emit({ type: "project", project: state });
      return;
    }
    state.report = stream.result;
    this.emit({ type: "project", project: state });
    void (async () => {
      for await (const event of stream) {
        if (event.type === "status_event") {
          state.report = event.report;
          this.emit({ type: "status", root, report: event.report, changed: event.changed });
        } else if (event.type === "notice" && event.code === "SHUTDOWN") {
          this.markLost("the pu daemon is stopping");
        }
      }
    })().catch((error: unknown) => this.log.event("status_stream_failed", { root, error }));
  }

  /**
   * Watches `$PU_HOME` (not a polling loop): a new `projects.json` means a project was added,
   * a new `state.json` that the queue, groups or usage changed.
   */
  private watchHome(): void {
    try {
      this.watcher = watch(this.home, (_kind, name) => {
        if (typeof name !== "string" || this.closing) return;
        if (name.startsWith("projects.json")) this.debounce("projects", 100, () => void this.refreshProjects().catch(() => undefined));
        else if (name.startsWith("state.json")) this.debounce("state", 200, () => this.emit({ type: "changed", what: "state" }));
      });
      this.watcher.on("error", (error) => this.log.event("home_watch_failed", { error }));
    } catch (error) {
      this.log.event("home_watch_failed", { error });
    }
  }

  private debounce(key: string, ms: number, fn: () => void): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        fn();
      }, ms),
    );
  }
}
