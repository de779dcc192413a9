// The slot ledger in-process: the caps from $PU_HOME/config.yaml, tickets in flight counted
// from state.json, a group's slot requests served in turn with the ticket line, a lent
// ticket slot, and nothing starting while paused or while the home config is broken.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentState } from "@pu/core/operator-state";
import { openDaemonLog } from "../src/daemon-log.js";
import { SlotLedger } from "../src/orchestration/slots.js";
import { OperatorStateStore, operatorStatePath } from "../src/orchestration/queue/state-store.js";
import { ProjectRegistry } from "../src/projects.js";
import { EngineState } from "../src/state.js";

describe("SlotLedger", () => {
  let base: string;
  let root: string;
  let store: OperatorStateStore;
  let ledger: SlotLedger;

  beforeEach(async () => {
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-slots-")));
    const home = path.join(base, "home");
    root = path.join(base, "project");
    mkdirSync(home);
    mkdirSync(path.join(root, ".pu"), { recursive: true });
    writeFileSync(path.join(home, "config.yaml"), "queue:\n  maxParallel: 2\n");
    const state = new EngineState(home, new ProjectRegistry(path.join(base, "projects.json")), openDaemonLog(path.join(base, "daemon.log")));
    store = new OperatorStateStore(operatorStatePath(home));
    await store.load();
    // Two hosts: one with a cap of one agent, one with no cap; any other name is no host.
    ledger = new SlotLedger(state, store, async (name) => (name === "one" ? 1 : name === "open" ? null : undefined));
  });

  afterEach(() => rmSync(base, { recursive: true, force: true }));

  /** A ticket in flight, as state.json records it (only what the count reads). */
  const inFlight = (ticketId: string) => store.state.agents.push({ project: root, ticket_id: ticketId } as AgentState);

  it("serves the ticket line and a group's line in turn, one launch per freed slot", async () => {
    const order: string[] = [];
    const tickets = ["TASK-0001", "TASK-0002", "TASK-0003"];
    const group = [ledger.request(root, "group:g1"), ledger.request(root, "group:g1"), ledger.request(root, "group:g1")];
    const releases: (() => void)[] = [];
    for (const [i, request] of group.entries()) void request.granted.then((release) => (order.push(`member ${i + 1}`), releases.push(release)));
    const fill = () =>
      ledger.fill(async (fits) => {
        const next = tickets[0];
        if (next === undefined || !(await fits(root))) return undefined;
        return { serve: async () => void (order.push(tickets.shift()!), inFlight(next)) };
      }, () => false);

    await fill();
    await Promise.resolve();
    // Neither line served yet: the ticket line (waiting since before any request) first, then the group.
    expect(order).toEqual(["TASK-0001", "member 1"]);
    expect(ledger.used()).toBe(2);
    expect(await ledger.free(root)).toBe(0);
    await fill();
    expect(order).toHaveLength(2);

    // A member's slot freed: the line served longest ago (the tickets') goes next, not the group's.
    releases.shift()!();
    await fill();
    await Promise.resolve();
    expect(order).toEqual(["TASK-0001", "member 1", "TASK-0002"]);
    // A ticket's slot freed: now the group's turn.
    store.state.agents.splice(0, 1);
    await fill();
    await Promise.resolve();
    expect(order).toEqual(["TASK-0001", "member 1", "TASK-0002", "member 2"]);
  });

  it("a lent ticket slot counts for the group until it is given back; paused and a broken home config start nothing", async () => {
    inFlight("TASK-0001");
    inFlight("TASK-0002");
    const ticketServed = async () => {
      let served = 0;
      await ledger.fill(async (placeFor) => ((await placeFor(root)) === undefined ? undefined : { serve: async () => void (served++, inFlight(`TASK-9${served}`)) }), () => false);
      return served;
    };
    // Both slots are the tickets': a waiting ticket does not start.
    expect(await ticketServed()).toBe(0);
    const giveBack = ledger.lend(root, "TASK-0001");
    expect(ledger.used()).toBe(1);
    expect(await ledger.free(root)).toBe(1);
    giveBack();
    expect(ledger.used()).toBe(2);

    store.state.agents.length = 0;
    store.state.paused = true;
    expect(ledger.paused()).toBe(true);
    store.state.paused = false;
    writeFileSync(path.join(base, "home", "config.yaml"), "queue:\n  maxParallel: 0\n");
    await expect(ledger.maxParallel()).rejects.toMatchObject({ code: "CONFIG_ERROR" });
    expect(await ticketServed()).toBe(0);
  });

  it("places a group's launches over this machine and hosts: the place with room holding the fewest of its slots, each host under its cap", async () => {
    const placed: string[] = [];
    const releases: (() => void)[] = [];
    for (let i = 0; i < 5; i++) {
      void ledger.requestPlace(root, "group:g2", ["local", "one", "nohost"]).granted.then(({ release, place }) => (placed.push(place), releases.push(release)));
    }
    const fill = async () => {
      await ledger.fill(async () => undefined, () => false);
      await new Promise((resolve) => setImmediate(resolve));
    };
    await fill();
    // This machine's cap is 2 (maxParallel), the host's 1, and a name that is no host never has room.
    expect(placed).toEqual(["local", "one", "local"]);
    expect(ledger.used()).toBe(2);
    expect(ledger.usedOn("one")).toBe(1);
    // The host's slot freed: the next launch goes there (this machine is still full).
    releases[1]!();
    await fill();
    expect(placed).toEqual(["local", "one", "local", "one"]);
    // A host's slots take nothing from this machine's caps: a ticket still waits for a slot here.
    expect(await ledger.free(root)).toBe(0);
    releases[0]!();
    await fill();
    expect(placed).toEqual(["local", "one", "local", "one", "local"]);
  });

  it("places tickets over the project's queue.hosts: the place with room running the fewest of them; a ticket on a host counts there, not here", async () => {
    writeFileSync(path.join(root, ".pu", "config.yaml"), "queue:\n  hosts: [local, one]\n");
    const places: string[] = [];
    const fill = () =>
      ledger.fill(async (placeFor) => {
        const place = await placeFor(root);
        if (place === undefined) return undefined;
        return {
          serve: async () => {
            places.push(place);
            store.state.agents.push({ project: root, ticket_id: `TASK-000${places.length}`, ...(place === "local" ? {} : { host: place }) } as AgentState);
          },
        };
      }, () => false);
    await fill();
    // Two slots here (maxParallel), one on "one": here first (a tie goes to the first listed), then the host, then here again.
    expect(places).toEqual(["local", "one", "local"]);
    expect(ledger.used()).toBe(2);
    expect(ledger.usedOn("one")).toBe(1);
    expect(await ledger.placeKnown("one")).toBe(true);
    expect(await ledger.placeKnown("nohost")).toBe(false);
    // The host's ticket ends: the next goes there, as this machine is still full.
    store.state.agents.splice(1, 1);
    await fill();
    expect(places).toEqual(["local", "one", "local", "one"]);
  });

  it("a host without a cap always has room, and a paused ledger places nothing anywhere", async () => {
    const placed: string[] = [];
    for (let i = 0; i < 4; i++) void ledger.requestPlace(root, "group:g3", ["open"]).granted.then(({ place }) => void placed.push(place));
    store.state.paused = true;
    await ledger.fill(async () => undefined, () => ledger.paused());
    await new Promise((resolve) => setImmediate(resolve));
    expect(placed).toEqual([]);
    store.state.paused = false;
    await ledger.fill(async () => undefined, () => ledger.paused());
    await new Promise((resolve) => setImmediate(resolve));
    expect(placed).toEqual(["open", "open", "open", "open"]);
    expect(ledger.usedOn("open")).toBe(4);
    expect(ledger.used()).toBe(0);
  });
});
