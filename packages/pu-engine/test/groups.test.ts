// Multi-agent groups in a real daemon with the scripted fake agent: the order in which one
// slot is shared between a group's pending launches and queued tickets (they take turns), and
// group members counted by the caps with the tickets.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { listAgents } from "@pu/core/manifest";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, readManifest, startTestDaemon, trackAgentPid, trustProject, waitFor } from "./helpers/daemon.js";

afterEach(cleanupAll);

const FAKE_CONFIG = `defaultAgent: fake\nagents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n  other:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`;

function daemonLog(home: string): Record<string, unknown>[] {
  return readFileSync(path.join(home, "daemon.log"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("groups and the queue's slots", () => {
  it("one slot: a group's pending launches and queued tickets take turns, and everything finishes", async () => {
    const daemon = await startTestDaemon();
    writeFileSync(path.join(daemon.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    const client = await daemon.client();
    const root = (await makeProject(client, FAKE_CONFIG)).root;
    mkdirSync(path.join(root, ".pu", "workflows"), { recursive: true });
    writeFileSync(path.join(root, ".pu", "workflows", "TASK.yaml"), `steps:\n  - name: do\n    prompt: "sleep 300"\n`);
    await trustProject(client, root);

    await client.request("queue_pause", {});
    const group = await client.request("group_run", { projectRoot: root, kind: "multi_prompt", agents: ["fake"], prompt: "", prompts: ["sleep 300", "sleep 300", "sleep 300"] });
    await client.request("ticket_create", { projectRoot: root, title: "one", ticketType: "TASK" });
    await client.request("ticket_create", { projectRoot: root, title: "two", ticketType: "TASK" });
    await client.request("queue_resume", {});

    const done = await waitFor("the group to complete", async () => {
      const g = await client.request("group_status", { projectRoot: root, groupId: group.groupId });
      return g.phase === "complete" ? g : undefined;
    }, 90_000);
    for (const id of ["TASK-0001", "TASK-0002"]) {
      await waitFor(`${id} done`, async () => (await client.request("ticket_show", { projectRoot: root, ticketId: id })).ticket.state === "done", 60_000);
    }
    for (const { agent } of listAgents(readManifest(root))) trackAgentPid(agent.pid);
    expect(done.members.map((m) => m.state)).toEqual(["done", "done", "done"]);

    // Who got the slot, in order: the first stream waiting (the ticket queue) and the group alternate.
    const order = daemonLog(daemon.home)
      .filter((e) => e.event === "group_member_launched" || e.event === "queue_slot_taken")
      .map((e) => (e.event === "group_member_launched" ? "member" : "ticket"));
    expect(order).toEqual(["ticket", "member", "ticket", "member", "member"]);
    // One slot: no two of these agents were ever alive at once.
    const lives = listAgents(readManifest(root)).map(({ agent }) => ({ start: Date.parse(agent.startedAt), end: Date.parse(agent.completedAt ?? "") }));
    expect(lives).toHaveLength(5);
    const edges = lives.flatMap((l) => [{ at: l.start, d: 1 }, { at: l.end, d: -1 }]).sort((x, y) => x.at - y.at || x.d - y.d);
    let alive = 0;
    let most = 0;
    for (const e of edges) most = Math.max(most, (alive += e.d));
    expect(most).toBe(1);
  }, 120_000);
});

describe("groups in state.json that pu did not write", () => {
  it("a group in a phase pu does not drive (another tool's 'Running') is listed as unreadable and left as it is; the rest goes on", async () => {
    const daemon = await startTestDaemon();
    const file = path.join(daemon.home, "state.json");
    await daemon.stop();
    const foreign = { group_id: "g-seed01", ticket_id: "T-1", step_name: "explore", step_type: "multi_model", agent_ids: [], phase: "Running" };
    writeFileSync(file, JSON.stringify({ paused: false, agents: [], completed: [], multi_agent_groups: [foreign] }));
    const again = await startTestDaemon(daemon.home);
    const client = await again.client();
    const root = (await makeProject(client, FAKE_CONFIG)).root;
    const listed = await client.request("group_list", { projectRoot: root });
    expect(listed.unreadable).toEqual([expect.stringMatching(/^g-seed01: phase /)]);
    // The queue is not stopped by it: a change to state.json goes through, and the foreign group is kept as written.
    await client.request("queue_pause", {});
    const state = JSON.parse(readFileSync(file, "utf8")) as { paused: boolean; multi_agent_groups: unknown[] };
    expect(state.paused).toBe(true);
    expect(state.multi_agent_groups).toContainEqual(foreign);
  });
});
