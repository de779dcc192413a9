/**
 * The one ledger of launch capacity. Every launch the daemon makes on its own — a ticket's
 * agent, a group member, a plan worker — counts against the same caps (`queue.maxParallel`
 * across projects, `maxPerProject` each) and waits while automatic work is paused. daemon.ts
 * builds it and hands it to the queue, the groups and the plans alike.
 *
 * Tickets in flight hold a slot each (state.json's in-flight records), except while a
 * ticket's group step has lent it to the group's members. Other launchers `take` a slot for
 * as long as their agent runs, or wait in line with `request`: the queue's dispatch pass
 * serves the lines in turn with its own tickets (`fill`), the line served longest ago first,
 * so a big group cannot starve tickets nor tickets a group.
 *
 * A line may wait for a slot at one of several places (`requestPlace`: a group run `--on
 * local,gpu-box`). A host's slots are counted here per host against its `--max-agents` (no cap:
 * always room); they take nothing from this machine's caps, which are for this machine's cores.
 */
import os from "node:os";
import path from "node:path";
import { loadConfig, parseConfig, projectConfigWarnings, readConfigText, type Config } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { configPath } from "@pu/core/paths";
import type { EngineState } from "../state.js";
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { choosePlace } from "@pu/core/placement";
import type { LaunchSlots, PlaceRequest, SlotRequest } from "./launch-slots.js";
import type { OperatorStateStore } from "./queue/state-store.js";

const DEFAULT_HUNG_MINUTES = 30;

/** The queue settings that apply to one project: its cap, when a ticket's agent counts as hung, its config. */
export interface ProjectQueueSettings {
  maxPerProject: number;
  hungAfterMinutes: number;
  config: Config;
}

interface WaitingRequest {
  root: string;
  owner: string;
  places: readonly string[];
  since: number;
  grant: (granted: { release: () => void; place: string }) => void;
}

/** A host's cap on the launches placed there (`--max-agents`): null no cap, undefined no such host. */
export type HostCap = (host: string) => Promise<number | null | undefined>;

/** The next ticket the queue would start, if it fits; `serve` claims it. */
export interface TicketHead {
  serve: () => Promise<void>;
}

type SettingsFor = (root: string) => Promise<ProjectQueueSettings | undefined>;

export class SlotLedger implements LaunchSlots {
  /** Slots taken by launchers other than the ticket queue (plan workers, group members), per project. */
  private readonly borrowed = new Map<string, number>();
  /** Tickets (root + id) whose slot is lent to the members of their group step while it runs. */
  private readonly lent = new Set<string>();
  private readonly requests: WaitingRequest[] = [];
  /** When each line (the ticket queue, each owner of requests) was last served: the fair order. */
  private readonly lastServed = new Map<string, number>();
  private servedCount = 0;
  private readonly listeners = new Set<(reason: string) => void>();
  /** Why `$PU_HOME/config.yaml` cannot be used, as last read: while set nothing automatic starts. */
  private homeConfigProblem: string | undefined;
  /** Project settings warnings already logged, so each is said once. */
  private readonly loggedWarnings = new Set<string>();
  /** Slots taken on each host. */
  private readonly onHost = new Map<string, number>();
  /** Slots each owner holds at each place: where its next launch goes (the fewest first). */
  private readonly ownerHeld = new Map<string, Map<string, number>>();

  constructor(
    private readonly state: EngineState,
    private readonly store: OperatorStateStore,
    private readonly hostCap: HostCap = async () => undefined,
  ) {}

  // ---- caps ------------------------------------------------------------------------------

  homeConfigFile(): string {
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
      settings = parseConfig(await readConfigText(file), file).queue ?? {};
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

  async projectSettings(root: string): Promise<ProjectQueueSettings> {
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

  // ---- the count -------------------------------------------------------------------------

  private borrowedIn(root?: string): number {
    if (root !== undefined) return this.borrowed.get(root) ?? 0;
    let total = 0;
    for (const n of this.borrowed.values()) total += n;
    return total;
  }

  /** Slots in use here (in one project, or in all): tickets' agents and taken slots (a ticket on a host counts there). */
  used(root?: string): number {
    const tickets = this.store.state.agents.filter((a) => !a.host && (root === undefined || a.project === root) && !this.lent.has(lentKey(a.project, a.ticket_id)));
    return tickets.length + this.borrowedIn(root);
  }

  /** A ticket's group step runs: its own slot goes to the group's members until the returned call gives it back. */
  lend(root: string, ticketId: string): () => void {
    const key = lentKey(root, ticketId);
    this.lent.add(key);
    this.changed("slot lent to a group");
    return () => {
      if (this.lent.delete(key)) this.changed("slot returned by a group");
    };
  }

  /** Something may have made a launch possible (or impossible): every listener hears it. */
  changed(reason: string): void {
    for (const listener of [...this.listeners]) listener(reason);
  }

  // ---- LaunchSlots -----------------------------------------------------------------------

  paused(): boolean {
    return this.store.state.paused || this.state.stopping;
  }

  async free(root: string): Promise<number> {
    const limit = await this.maxParallel().catch(() => 0);
    const settings = await this.projectSettings(root).catch(() => undefined);
    return Math.max(0, Math.min(limit - this.used(), (settings?.maxPerProject ?? Number.POSITIVE_INFINITY) - this.used(root)));
  }

  take(root: string): () => void {
    return this.takeAt(root, "", LOCAL_PLACE);
  }

  takeAt(root: string, owner: string, place: string): () => void {
    const counts = place === LOCAL_PLACE ? this.borrowed : this.onHost;
    const key = place === LOCAL_PLACE ? root : place;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const held = this.ownerHeld.get(owner) ?? new Map<string, number>();
    this.ownerHeld.set(owner, held);
    held.set(place, (held.get(place) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (counts.get(key) ?? 1) - 1;
      if (left > 0) counts.set(key, left);
      else counts.delete(key);
      const heldLeft = (held.get(place) ?? 1) - 1;
      if (heldLeft > 0) held.set(place, heldLeft);
      else held.delete(place);
      if (held.size === 0 && this.ownerHeld.get(owner) === held) this.ownerHeld.delete(owner);
      this.changed("slot freed");
    };
  }

  /** Whether a place can ever have room: this machine, or a host this daemon knows. */
  async placeKnown(place: string): Promise<boolean> {
    return place === LOCAL_PLACE || (await this.hostCap(place).catch(() => undefined)) !== undefined;
  }

  /** Slots taken on a host now: launches placed there and tickets running there. */
  usedOn(host: string): number {
    return (this.onHost.get(host) ?? 0) + this.store.state.agents.filter((a) => a.host === host).length;
  }

  onChange(listener: (reason: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  request(root: string, owner: string): SlotRequest {
    const request = this.requestPlace(root, owner, [LOCAL_PLACE]);
    return { granted: request.granted.then((g) => g.release), cancel: request.cancel };
  }

  requestPlace(root: string, owner: string, places: readonly string[]): PlaceRequest {
    let entry: WaitingRequest | undefined;
    const granted = new Promise<{ release: () => void; place: string }>((resolve) => {
      entry = { root, owner, places, since: Date.now(), grant: resolve };
      this.requests.push(entry);
    });
    this.changed("slot requested");
    return {
      granted,
      cancel: () => {
        const i = entry ? this.requests.indexOf(entry) : -1;
        if (i >= 0) this.requests.splice(i, 1);
      },
    };
  }

  // ---- the fair order --------------------------------------------------------------------

  /**
   * Fills free slots from the lines that wait for one: the ticket queue (`nextTicket`: its
   * first ticket with a place to run — `placeFor` names it, from the project's `queue.hosts`) and
   * each owner's requests (in request order). The line served longest ago goes next, so every
   * release drains groups' and tickets' launches in turn. Nothing starts while
   * `$PU_HOME/config.yaml` cannot be used (logged once, shown by `pu queue`).
   */
  async fill(nextTicket: (placeFor: (root: string) => Promise<string | undefined>, settingsFor: SettingsFor) => Promise<TicketHead | undefined>, blocked: () => boolean): Promise<void> {
    const limit = await this.maxParallel().catch(() => undefined);
    if (limit === undefined) return;
    const settingsOf = new Map<string, Promise<ProjectQueueSettings | undefined>>();
    const settingsFor: SettingsFor = (root) => {
      let settings = settingsOf.get(root);
      if (!settings) settingsOf.set(root, (settings = this.projectSettings(root).catch(() => undefined)));
      return settings;
    };
    const fits = async (root: string) => {
      const settings = await settingsFor(root);
      return settings !== undefined && this.used(root) < settings.maxPerProject;
    };
    const caps = new Map<string, Promise<number | null | undefined>>();
    const capOf = (host: string) => {
      let cap = caps.get(host);
      if (!cap) caps.set(host, (cap = this.hostCap(host).catch(() => undefined)));
      return cap;
    };
    // A ticket's place: of its project's places (`queue.hosts`, default here) with room, the one running the fewest of the project's tickets.
    const placeFor = async (root: string, roomHere: boolean) => {
      const settings = await settingsFor(root);
      if (!settings) return undefined;
      const places = settings.config.queue?.hosts ?? [LOCAL_PLACE];
      const room = new Set<string>();
      for (const place of places) {
        if (place === LOCAL_PLACE ? roomHere && (await fits(root)) : await this.hostHasRoom(place, capOf)) room.add(place);
      }
      const running = (place: string) => this.store.state.agents.filter((a) => a.project === root && (a.host ?? LOCAL_PLACE) === place).length;
      return choosePlace(places, (p) => room.has(p), running);
    };
    for (;;) {
      if (blocked()) return;
      const roomHere = this.used() < limit;
      const heads: { stream: string; since: number; serve: () => Promise<void> }[] = [];
      const ticket = await nextTicket((root) => placeFor(root, roomHere), settingsFor);
      if (ticket) heads.push({ stream: "tickets", since: 0, serve: ticket.serve });
      const owners = new Set<string>();
      for (const request of this.requests) {
        if (owners.has(request.owner)) continue;
        owners.add(request.owner);
        const room = new Set<string>();
        for (const place of request.places) {
          if (place === LOCAL_PLACE ? roomHere && (await fits(request.root)) : await this.hostHasRoom(place, capOf)) room.add(place);
        }
        const held = this.ownerHeld.get(request.owner);
        const place = choosePlace(request.places, (p) => room.has(p), (p) => held?.get(p) ?? 0);
        if (place === undefined) continue;
        heads.push({
          stream: `request:${request.owner}`,
          since: request.since,
          serve: async () => {
            const i = this.requests.indexOf(request);
            if (i < 0) return; // cancelled meanwhile
            this.requests.splice(i, 1);
            request.grant({ release: this.takeAt(request.root, request.owner, place), place });
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

  private async hostHasRoom(host: string, capOf: (host: string) => Promise<number | null | undefined>): Promise<boolean> {
    const cap = await capOf(host);
    return cap !== undefined && (cap === null || this.usedOn(host) < cap);
  }
}

function lentKey(root: string, ticketId: string): string {
  return `${root}\0${ticketId}`;
}
