// Work the orchestrator owns survives a person's sweep: with a ticket waiting for its review, a
// group whose members are busy and a plan worker on its task, `pu clean --all` and
// `pu kill --all` leave their worktrees and agents alone and name each owner; naming one of them
// is refused; the owner's cancel (or --force) lets go. A person's own worktree is cleaned as ever.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox, REPO_ROOT } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

const MEMBER = path.join(REPO_ROOT, "tests/fixtures/group-member.mjs");
const PLAN_ROLE = path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs");

interface CleanJson {
  cleaned: { worktreeId: string; killedAgents: string[] }[];
  kept: { worktreeId: string; reason: string; owner?: { kind: string; id: string } }[];
}
interface KillJson {
  killed: { agentId: string }[];
  skipped: { agentId: string; reason: string; owner?: { kind: string; id: string } }[];
}
interface GroupJson {
  groupId: string;
  phase: string;
  members: { variant: string; state: string; agentId: string | null; worktreeId: string | null }[];
}
interface PlanJson {
  sessionId: string;
  phase: string;
  tasks: { id: string; status: string; worker?: string }[];
}
interface ReviewJson {
  reviews: { ticketId: string; agentId: string | null }[];
}

describe("work a ticket, group or plan owns", { timeout: 240_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-owned-");
    await sb.ok(["init"]);
    const pu = path.join(sb.root, ".pu");
    const member = `${process.execPath} ${MEMBER}`;
    writeFileSync(
      path.join(pu, "config.yaml"),
      [
        "defaultAgent: fake",
        "agents:",
        `  fake: { command: ${JSON.stringify(FAKE_AGENT_COMMAND)}, interactive: true }`,
        `  alpha: { command: ${JSON.stringify(member)} }`,
        `  beta: { command: ${JSON.stringify(member)} }`,
        `  planbot: { command: ${JSON.stringify(`${process.execPath} ${PLAN_ROLE}`)} }`,
        "plan:",
        "  agents: { explorer: planbot, planner: planbot, worker: planbot, verifier: planbot }",
        "",
      ].join("\n"),
    );
    // A ticket that stops for a person's review after its first step: in flight for as long as the test needs.
    mkdirSync(path.join(pu, "workflows"), { recursive: true });
    writeFileSync(path.join(pu, "workflows", "TASK.yaml"), 'steps:\n  - name: plan\n    prompt: "echo planned {{TITLE}}"\n    review: plan\n');
    await sb.ok(["trust"]);
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 8\n");
    const groupScenario = path.join(sb.base, "group.json");
    writeFileSync(groupScenario, JSON.stringify({ default: { hang: true } }));
    const planScenario = path.join(sb.base, "plan.json");
    writeFileSync(planScenario, JSON.stringify({ tasks: [{ id: "a", subject: "make a.txt", description: "write a.txt", blockedBy: [], criteria: ["a.txt exists"] }], slowMs: 600_000 }));
    // The daemon (and so every member and role agent) reads the scenarios from its environment.
    await sb.ok(["daemon", "restart"], { env: { GROUP_TEST_SCENARIO: groupScenario, PLAN_TEST_SCENARIO: planScenario } });
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("clean --all and kill --all keep what a running ticket, group or plan owns and say whose it is; cancel or --force lets go", async () => {
    // The ticket, waiting for its review with its agent alive.
    await sb.ok(["ticket", "create", "owned work", "--type", "TASK"]);
    const review = await waitFor("the ticket to wait for its review", async () => {
      const list = await sb.puJson<ReviewJson>(["review", "list"]);
      return list.reviews.find((r) => r.ticketId === "TASK-0001" && r.agentId);
    }, 60_000);
    const ticketAgent = review.agentId!;
    const ticketWorktree = (await sb.agent(ticketAgent)).worktreeId!;

    // The group, both members busy.
    const group = await sb.puJson<GroupJson>(["group", "run", "never done", "--agents", "alpha,beta"]);
    const running = await waitFor("both members to run", async () => {
      const g = await sb.puJson<GroupJson>(["group", "status", group.groupId]);
      return g.members.every((m) => m.state === "running" && m.agentId && m.worktreeId) ? g : undefined;
    }, 60_000);

    // The plan, its worker on task a.
    const plan = await sb.puJson<PlanJson>(["plan", "start", "one slow task", "--auto", "--skip-verify"]);
    const worker = await waitFor("the plan's worker on task a", async () => {
      const p = await sb.puJson<PlanJson>(["plan", "status", plan.sessionId]);
      return p.tasks.find((t) => t.id === "a")?.worker;
    }, 90_000);
    const workerWorktree = (await sb.agent(worker)).worktreeId!;

    // And a person's own worktree, which is theirs to clean.
    const mine = await sb.spawnAgent(["--agent", "terminal", "--name", "mine"]);

    const owned: [string, string][] = [
      [ticketWorktree, "ticket TASK-0001"],
      ...running.members.map((m): [string, string] => [m.worktreeId!, `group ${group.groupId}`]),
      [workerWorktree, `plan ${plan.sessionId}`],
    ];
    const ownedAgents = [ticketAgent, ...running.members.map((m) => m.agentId!), worker];

    const human = await sb.ok(["clean", "--all"]);
    expect(human).toContain(`cleaned ${mine.worktreeId}`);
    for (const [wt, owner] of owned) expect(human).toMatch(new RegExp(`kept ${wt} \\([^)]*\\): owned by ${owner}; cancel it \\(pu \\w+ cancel [\\w-]+\\) or use --force`));
    expect(human.match(/killed ag-\w+/g)).toEqual([`killed ${mine.agentId}`]);
    for (const agentId of ownedAgents) expect((await sb.agent(agentId)).live, agentId).toBe(true);
    for (const [wt] of owned) expect(existsSync(path.join(sb.root, ".pu", "worktrees", wt)), wt).toBe(true);

    const cleanJson = await sb.puJson<CleanJson>(["clean", "--all"]);
    expect(cleanJson.cleaned).toEqual([]);
    expect(cleanJson.kept.find((k) => k.worktreeId === ticketWorktree)?.owner).toEqual({ kind: "ticket", id: "TASK-0001" });

    const killed = await sb.puJson<KillJson>(["kill", "--all", "--include-root"]);
    expect(killed.killed).toEqual([]);
    for (const agentId of ownedAgents) expect(killed.skipped.find((s) => s.agentId === agentId)?.reason, agentId).toMatch(/^owned by (ticket|group|plan) /);
    expect(await sb.ok(["kill", "--all"])).toMatch(new RegExp(`skipped ${ticketAgent}: owned by ticket TASK-0001; cancel it \\(pu ticket cancel TASK-0001\\) or use --force`));
    for (const agentId of ownedAgents) expect((await sb.agent(agentId)).live, agentId).toBe(true);

    // Named one by one: refused with one line naming the owner.
    const member = running.members[0]!;
    for (const args of [["kill", ticketWorktree], ["kill", worker], ["clean", "--worktree", member.worktreeId!]]) {
      const refused = await sb.pu(args);
      expect(refused.code, args.join(" ")).toBe(1);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(refused.stderr).toMatch(/refusing to (kill|clean) .*: it is owned by (ticket|group|plan) .* or use --force/);
    }
    expect((await sb.agent(worker)).live).toBe(true);

    // The owner's cancel lets go: the group's worktrees are a person's to clean again.
    await sb.ok(["group", "cancel", group.groupId]);
    const afterCancel = await sb.puJson<CleanJson>(["clean", "--worktree", member.worktreeId!]);
    expect(afterCancel.cleaned.map((c) => c.worktreeId)).toEqual([member.worktreeId]);

    // --force goes through: the ticket's agent is stopped (and the ticket fails, as it was told).
    const forced = await sb.puJson<KillJson>(["kill", ticketAgent, "--force"]);
    expect(forced.killed.map((k) => k.agentId)).toEqual([ticketAgent]);
    await sb.ok(["ticket", "cancel", "TASK-0001"]);
    await sb.ok(["plan", "cancel", plan.sessionId]);
  });
});
