// The work queue through the `pu` CLI: a ticket created, refused while its workflow's gate is
// untrusted, worked after `pu trust` + `pu queue resume`, then stats, prefer, pause with a
// person's spawn, and cancel of a queued ticket.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

interface TicketShow {
  ticket: { id: string; state: string; history?: { event: string }[] };
  completed?: { summary: string };
}

describe("pu ticket / queue / review / stats", { timeout: 120_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-queue-");
    await sb.puJson(["init"]);
    const pu = path.join(sb.root, ".pu");
    writeFileSync(path.join(pu, "config.yaml"), `defaultAgent: fake\nagents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`);
    mkdirSync(path.join(pu, "workflows"), { recursive: true });
    writeFileSync(
      path.join(pu, "workflows", "TASK.yaml"),
      `steps:\n  - name: do\n    prompt: "write {{OUTPUT_FILE}} did {{TITLE}}"\n    gate: { run: "touch gate-ran" }\n`,
    );
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("holds a ticket whose workflow is untrusted, and works it after pu trust and pu queue resume", async () => {
    const created = await sb.puJson<{ ticket: { id: string; path: string } }>(["ticket", "create", "say hi", "--type", "task", "--priority", "P1"]);
    expect(created.ticket.id).toBe("TASK-0001");
    expect(created.ticket.path).toBe(path.join(sb.root, ".pu", "tickets", "queue", "TASK-0001.md"));

    const held = await waitFor("the ticket to be held", async () => {
      const q = await sb.puJson<{ problems: { message: string }[]; waiting: { id: string }[] }>(["queue"]);
      return q.problems.find((p) => p.message.includes("pu trust")) ? q : undefined;
    });
    expect(held.waiting.map((t) => t.id)).toEqual(["TASK-0001"]);
    expect(existsSync(path.join(sb.root, "gate-ran"))).toBe(false);

    await sb.ok(["trust"]);
    expect(await sb.ok(["queue", "resume"])).toContain("queue resumed");
    const done = await waitFor("the ticket to be done", async () => {
      const shown = await sb.puJson<TicketShow>(["ticket", "show", "TASK-0001"]);
      return shown.ticket.state === "done" && shown.completed ? shown : undefined;
    });
    expect(done.completed?.summary).toBe("did say hi");
    expect(done.ticket.history?.map((h) => h.event)).toEqual(["not started", "dispatched", "step done", "done"]);
    expect(await sb.ok(["ticket", "list"])).toMatch(/TASK-0001\s+done\s+P1/);
  });

  it("prints usage stats and records a preferred tool", async () => {
    const stats = await waitFor("the run in the stats", async () => {
      const s = await sb.puJson<{ rows: { tool: string; runs: number; successes: number }[] }>(["stats"]);
      return s.rows.length > 0 ? s : undefined;
    });
    expect(stats.rows).toEqual([expect.objectContaining({ tool: "fake", runs: 1, successes: 1 })]);
    expect(await sb.ok(["stats"])).toMatch(/fake\s+default\s+1\s+1\s+0/);
    await sb.ok(["stats", "prefer", "fake", "--model", "m1"]);
    const state = JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as { project_llm_stats: Record<string, { preferred_tool: string; preferred_model: string }> };
    expect(state.project_llm_stats[sb.root]).toMatchObject({ preferred_tool: "fake", preferred_model: "m1" });
  });

  it("while paused: tickets wait, a person's spawn runs and says so; a queued ticket can be cancelled", async () => {
    await sb.ok(["queue", "pause"]);
    await sb.ok(["ticket", "create", "later", "--type", "TASK"]);
    const spawn = await sb.pu(["spawn", "--agent", "fake", "--root", "--json"]);
    expect(spawn.code).toBe(0);
    expect(spawn.stderr).toContain("the queue is paused");
    const { agentId } = JSON.parse(spawn.stdout) as { agentId: string };
    await sb.ok(["kill", agentId]);
    expect(await sb.ok(["queue"])).toMatch(/PAUSED[\s\S]*TASK-0002/);
    expect(await sb.ok(["ticket", "cancel", "TASK-0002"])).toContain("cancelled TASK-0002");
    const shown = await sb.puJson<TicketShow>(["ticket", "show", "TASK-0002"]);
    expect(shown.ticket.state).toBe("done");
    const r = await sb.pu(["review", "approve", "TASK-0002"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("TASK-0002 is not in progress");
  });

  it("a step's artifact must be a file in the worktree: /etc/passwd is refused, a symlink out of it does not count as done", async () => {
    await sb.ok(["queue", "resume"]);
    const workflows = path.join(sb.root, ".pu", "workflows");
    writeFileSync(path.join(workflows, "ABS.yaml"), 'steps:\n  - name: do\n    prompt: "echo nothing"\n    artifact: /etc/passwd\n');
    writeFileSync(path.join(workflows, "LINK.yaml"), 'steps:\n  - name: do\n    agent: terminal\n    prompt: "ln -s /etc/passwd out.md"\n    artifact: out.md\n    max_retries: 0\n');
    await sb.ok(["trust"]);
    await sb.ok(["ticket", "create", "absolute", "--type", "ABS"]);
    const held = await waitFor("the ABS ticket to be held", async () => {
      const q = await sb.puJson<{ problems: { file: string; message: string }[] }>(["queue"]);
      return q.problems.find((p) => p.file.endsWith("ABS-0001.md"));
    });
    expect(held.message).toContain("ABS.yaml: steps[0].artifact: must be a path inside the worktree");

    await sb.ok(["ticket", "create", "link", "--type", "LINK"]);
    const waiting = await waitFor("the LINK ticket to wait for a decision", async () => {
      const list = await sb.puJson<{ reviews: { ticketId: string; lastMessage: string | null; worktreePath: string | null }[] }>(["review", "list"]);
      return list.reviews.find((r) => r.ticketId === "LINK-0001" && r.lastMessage);
    }, 60_000);
    expect(waiting.lastMessage).toMatch(/out\.md is a file in your worktree; it leads to \/etc\/passwd, outside it/);
    expect((await sb.puJson<TicketShow>(["ticket", "show", "LINK-0001"])).ticket.state).toBe("in-progress");
    await sb.ok(["ticket", "cancel", "LINK-0001"]);
  });
});
