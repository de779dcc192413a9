// Status streams from the hosts: while anyone here follows a project's status (`pu status
// --watch`, `pu dash`, `pu web`), each of its placements has a `subscribe_status` of its own on
// the host, over a bridge of its own, re-opened with a doubling backoff when lost.
import type { RemoteProject } from "@pu/core/remote-projects-file";
import type { StatusReport } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { DaemonLog } from "../daemon-log.js";
import type { HostBridge, HostLinks } from "./host-links.js";
import type { HostService } from "./host-service.js";
import { placementKey as keyOf } from "./remote-status.js";

/** What the watches read of the placements and tell them. */
export interface WatchedPlacements {
  projectsOf(projectRoot: string): RemoteProject[];
  /** A host's report arrived, or the host went quiet (reachable false, the last report kept). */
  heard(project: RemoteProject, report: StatusReport | null, reachable: boolean): void;
  lastReport(project: RemoteProject): StatusReport | null;
}

export class RemoteWatches {
  private readonly watches = new Map<string, { viewers: number; running: Map<string, { stop(): void }> }>();

  constructor(
    private readonly hosts: HostService,
    private readonly links: HostLinks,
    private readonly log: DaemonLog,
    private readonly placements: WatchedPlacements,
  ) {}

  /** Follows the hosts' reports of a project while `conn` (a `subscribe_status` stream) is open. */
  watch(projectRoot: string, conn: ConnectionContext): void {
    let watch = this.watches.get(projectRoot);
    if (!watch) {
      watch = { viewers: 0, running: new Map() };
      this.watches.set(projectRoot, watch);
    }
    watch.viewers += 1;
    this.start(projectRoot);
    const own = watch;
    conn.onClose(() => {
      own.viewers -= 1;
      if (own.viewers > 0 || this.watches.get(projectRoot) !== own) return;
      this.watches.delete(projectRoot);
      for (const running of own.running.values()) running.stop();
    });
  }

  /** The projects whose status someone follows now. */
  roots(): string[] {
    return [...this.watches.keys()];
  }

  /** Each placement of the project not followed yet gets its subscription, while anyone watches the project. */
  start(projectRoot: string): void {
    const watch = this.watches.get(projectRoot);
    if (!watch) return;
    for (const project of this.placements.projectsOf(projectRoot)) {
      const key = keyOf(project);
      if (watch.running.has(key)) continue;
      let stopped = false;
      let bridge: HostBridge | undefined;
      let retry: NodeJS.Timeout | undefined;
      watch.running.set(key, {
        stop: () => {
          stopped = true;
          clearTimeout(retry);
          bridge?.close();
        },
      });
      let failures = 0;
      const follow = async (): Promise<void> => {
        try {
          const host = await this.hosts.get(project.host);
          bridge = await this.links.dedicated(host);
          if (stopped) return bridge.close();
          const stream = await bridge.client.openStream("subscribe_status", { projectRoot: project.mirror });
          failures = 0;
          this.placements.heard(project, stream.result, true);
          for await (const event of stream) {
            if (stopped) break;
            if (event.type === "status_event") this.placements.heard(project, event.report, true);
          }
        } catch (error) {
          this.log.event("remote_watch_failed", { host: project.host, projectRoot, error: (error as Error).message });
        }
        bridge?.close();
        if (stopped) return;
        this.placements.heard(project, this.placements.lastReport(project), false);
        failures += 1;
        retry = setTimeout(() => void follow(), Math.min(30_000, 1000 * 2 ** Math.min(failures - 1, 5)));
        retry.unref();
      };
      void follow();
    }
  }
}
