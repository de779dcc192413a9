// Multi-agent groups end to end through the real `pu` binary and daemon, with scripted members
// (tests/fixtures/group-member.mjs, custom agent types) that write files and outputs, fail,
// hang, fix their work after a failed gate, or judge. Caps are counted from the status stream.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { allAgents, PuSandbox, REPO_ROOT, type StatusJson } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

const MEMBER = path.join(REPO_ROOT, "tests/fixtures/group-member.mjs");

interface MemberJson {
  variant: string;
  agentType: string;
  model: string | null;
  state: string;
  agentId: string | null;
  worktreeId: string | null;
  worktreePath: string | null;
  branch: string | null;
  reason: string | null;
  gate: { passed: boolean; attempts: number } | null;
  diff: { files: number; insertions: number; deletions: number } | null;
  output: string | null;
  outputSource: string | null;
  judgeRank: number | null;
}
interface GroupJson {
  groupId: string;
  phase: string;
  kind: string;
  members: MemberJson[];
  winner: string | null;
  failureReasons: string[];
  pendingLaunches: number;
  aggregatedText: string | null;
}
interface StateJson {
  multi_agent_groups: {
    group_id: string;
    step_type: string;
    phase: string;
    agent_ids: string[];
    expected_total: number;
    pending_launches: { variant_key: string; delegator_name: string; prompt: string }[];
    agent_variant_keys: Record<string, string>;
    individual_outputs: Record<string, { state: string; output: string }>;
  }[];
}

describe("multi-agent groups", { timeout: 240_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-groups-");
    await sb.ok(["init"]);
    const config = path.join(sb.root, ".pu/config.yaml");
    const command = `${process.execPath} ${MEMBER}`;
    writeFileSync(config, `${readFileSync(config, "utf8").replace(/^defaultAgent:.*$/m, "defaultAgent: alpha")}\nagents:\n  alpha:\n    command: ${command}\n  beta:\n    command: ${command}\n  ghost:\n    command: no-such-agent-cli\n`);
    // A ticket type whose first step fans out to both agents; the next step gets the group's output.
    mkdirSync(path.join(sb.root, ".pu/workflows"), { recursive: true });
    writeFileSync(
      path.join(sb.root, ".pu/workflows/TASK.yaml"),
      'steps:\n  - name: explore\n    type: multi_model\n    agents: [alpha, beta]\n    prompt: "try {{TITLE}} into {{OUTPUT_FILE}}"\n  - name: report\n    prompt: "{{GROUP_OUTPUT}}"\n',
    );
    await sb.ok(["trust"]);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  const scenario = async (name: string, value: unknown, maxParallel: number): Promise<void> => {
    const file = path.join(sb.base, `${name}.json`);
    writeFileSync(file, JSON.stringify(value));
    writeFileSync(path.join(sb.home, "config.yaml"), `queue:\n  maxParallel: ${maxParallel}\n`);
    // The daemon (and so every member) reads the scenario from its environment.
    await sb.ok(["daemon", "restart"], { env: { GROUP_TEST_SCENARIO: file } });
  };
  const promptFiles = (names: string[]): string[] =>
    names.flatMap((name) => {
      const file = path.join(sb.base, `${name}.md`);
      writeFileSync(file, `approach ${name}\n`);
      return ["--prompt-file", file];
    });
  const status = (id: string) => sb.puJson<GroupJson>(["group", "status", id]);
  const finished = (id: string, timeoutMs = 90_000) =>
    waitFor(`group ${id} to end`, async () => {
      const group = await status(id);
      return ["complete", "failed", "cancelled"].includes(group.phase) ? group : undefined;
    }, timeoutMs, 250);
  const stateFile = (): StateJson => JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateJson;

  it("5 members through 2 slots: never 3 alive, a failing and a hanging member never stall the group, all 5 finish", async () => {
    await scenario("caps", { default: { lines: 1, slowMs: 600 }, members: { "1": { fail: true }, "3": { hang: true } } }, 2);
    const watcher = sb.startPu(["status", "--watch", "--json"]);
    const started = await sb.puJson<GroupJson>(["group", "run", "shared task", "--agent", "alpha", ...promptFiles(["a", "b", "c", "d", "e"]), "--timeout", "0.1"]);
    expect(started.kind).toBe("multi_prompt");
    expect(started.members.map((m) => m.variant)).toEqual(["0", "1", "2", "3", "4"]);
    // Recorded as the seed spells it, every member a pending launch until a slot takes it.
    const recorded = stateFile().multi_agent_groups.find((g) => g.group_id === started.groupId);
    expect(recorded).toMatchObject({ step_type: "multi_prompt", expected_total: 5 });
    expect(recorded!.pending_launches.length + recorded!.agent_ids.length).toBe(5);
    expect(recorded!.pending_launches.find((p) => p.variant_key === "4")?.prompt).toBe("shared task\n\napproach e");

    const done = await finished(started.groupId);
    expect(done.phase).toBe("complete");
    const byVariant = Object.fromEntries(done.members.map((m) => [m.variant, m]));
    expect(byVariant["1"]).toMatchObject({ state: "failed", reason: expect.stringMatching(/exited \(code 3\)/) });
    expect(byVariant["3"]).toMatchObject({ state: "failed", reason: expect.stringMatching(/timeout_minutes/) });
    for (const v of ["0", "2", "4"]) {
      expect(byVariant[v]).toMatchObject({ state: "done", outputSource: "file", diff: { files: 2, insertions: 2, deletions: 0 } });
      expect(byVariant[v]?.output).toContain(`output of ${v} (turn 1)`);
    }
    // Each member worked in its own worktree, all from the same base.
    const worktrees = new Set(done.members.map((m) => m.worktreePath));
    expect(worktrees.size).toBe(5);
    const after = stateFile().multi_agent_groups.find((g) => g.group_id === started.groupId)!;
    expect(after.pending_launches).toEqual([]);
    expect(after.agent_ids).toHaveLength(5);
    expect(Object.values(after.agent_variant_keys).sort()).toEqual(["0", "1", "2", "3", "4"]);
    expect(Object.keys(after.individual_outputs).sort()).toEqual(["0", "1", "2", "3", "4"]);

    watcher.child.kill("SIGINT");
    await watcher.exited;
    const lines = watcher.output().trim().split("\n").filter(Boolean);
    let most = 0;
    const seen = new Set<string>();
    for (const line of lines) {
      const { report } = JSON.parse(line) as { report: StatusJson };
      const members = Object.values(report.worktrees)
        .filter((w) => w.name.startsWith(`group-${started.groupId.slice(2)}-`))
        .flatMap((w) => Object.values(w.agents))
        .filter((a) => a.live);
      for (const a of members) seen.add(a.id);
      most = Math.max(most, members.length);
    }
    expect(seen.size).toBe(5);
    expect(most).toBe(2);
  });

  it("matrixed: every agent × every prompt under {delegator}:{prompt_idx}, outputs collected side by side", async () => {
    await scenario("matrix", { default: { lines: 1 } }, 4);
    const started = await sb.puJson<GroupJson>(["group", "run", "--agents", "alpha,beta", "--model", "beta=big", ...promptFiles(["x", "y"]), "--matrix"]);
    expect(started.kind).toBe("matrixed");
    expect(started.members.map((m) => m.variant).sort()).toEqual(["alpha:0", "alpha:1", "beta:big:0", "beta:big:1"]);
    expect(started.members.find((m) => m.variant === "beta:big:1")).toMatchObject({ agentType: "beta", model: "big" });
    const done = await finished(started.groupId);
    expect(done.phase).toBe("complete");
    expect(done.members.every((m) => m.state === "done")).toBe(true);
    // Each member saw its own variant key and prompt; collect puts every output in the aggregate.
    for (const m of done.members) expect(m.output).toContain(`output of ${m.variant} (turn 1): approach ${m.variant.endsWith("0") ? "x" : "y"}`);
    for (const m of done.members) expect(done.aggregatedText).toContain(`## ${m.variant}`);
    expect(done.winner).toBeNull();
    // pu stopped each member after its work: finished by the group, not a wall of red "exit 143".
    const members = new Set(done.members.map((m) => m.agentId));
    const stopped = allAgents(await sb.status()).filter((a) => members.has(a.id));
    expect(stopped.map((a) => [a.status, a.finishedBy])).toEqual(done.members.map(() => ["broken", "group"]));
    const table = (await sb.ok(["status"])).split("\n").filter((line) => [...members].some((id) => id !== null && line.includes(id)));
    expect(table).toHaveLength(4);
    for (const line of table) expect(line).toMatch(/broken \(done\)\s.*stopped by group/);
    const compare = await sb.ok(["group", "compare", started.groupId]);
    expect(compare).toMatch(/VARIANT\s+AGENT\s+MODEL\s+STATE\s+TIME\s+COST\s+FILES\s+\+\/-\s+GATE\s+RANK/);
    expect(compare).toMatch(/beta:big:0\s+beta\s+big\s+done/);
    // collect names no winner: pick asks for one.
    const pick = await sb.pu(["group", "pick", started.groupId]);
    expect(pick.code).not.toBe(0);
    expect(pick.stderr.trim().split("\n")).toHaveLength(1);
    expect(pick.stderr).toMatch(/has no winner.*name one/);
  });

  it("aggregate gate: a member fixes its work after a failed gate; the smallest passing change wins; pick merges it and cleans the rest", async () => {
    await scenario("gate", { members: { alpha: { lines: 5 }, beta: { lines: 1, fixOnRetry: true } } }, 4);
    const run = await sb.pu(["group", "run", "make ok.txt", "--agents", "alpha,beta", "--gate", "test -f ok.txt", "--retries", "1", "--aggregate", "gate", "--wait"]);
    expect(run.code, run.stderr).toBe(0);
    const id = (/group (g-[0-9a-f]+) started/.exec(run.stderr) ?? [])[1] ?? "";
    const done = await status(id);
    expect(done.phase).toBe("complete");
    expect(done.members.find((m) => m.variant === "beta")?.gate).toMatchObject({ passed: true, attempts: 2 });
    expect(done.members.find((m) => m.variant === "alpha")?.gate).toMatchObject({ passed: true, attempts: 1 });
    expect(done.winner).toBe("beta");
    const diff = await sb.ok(["group", "diff", id, "beta"]);
    expect(diff).toContain("+beta line 1");
    const alphaPath = done.members.find((m) => m.variant === "alpha")?.worktreePath ?? "";
    expect(existsSync(alphaPath)).toBe(true);

    await sb.ok(["group", "pick", id]);
    expect(sb.git(["show", "main:beta.txt"])).toBe("beta line 1");
    expect(existsSync(alphaPath)).toBe(false);
    expect(sb.git(["branch", "--list", "pu/group-*-alpha"])).not.toContain(`group-${id.slice(2)}-alpha`);
    expect((await status(id)).members.find((m) => m.variant === "alpha")?.state).toBe("done");
  });

  it("aggregate judge: an invalid verdict is typed back once; the ranking shows in compare; a judge that stays invalid fails the group", async () => {
    const verdict = { winner: "alpha", ranking: ["alpha", "beta"], reasons: { alpha: "longer", beta: "shorter" } };
    await scenario("judge", { default: { lines: 2 }, judge: { verdict, invalidFirst: true } }, 4);
    const started = await sb.puJson<GroupJson>(["group", "run", "write something", "--agents", "alpha,beta", "--aggregate", "judge", "--judge", "beta"]);
    const done = await finished(started.groupId);
    expect(done.failureReasons).toEqual([]);
    expect(done.phase).toBe("complete");
    expect(done.winner).toBe("alpha");
    expect(done.members.map((m) => [m.variant, m.judgeRank])).toEqual([["alpha", 1], ["beta", 2]]);
    const materials = readFileSync(path.join(sb.root, ".pu/groups", started.groupId, "judge-input.md"), "utf8");
    expect(materials).toContain("+alpha line 2");
    expect(await sb.ok(["group", "compare", started.groupId])).toMatch(/judge on beta: shorter/);

    await scenario("judge-bad", { default: { lines: 1 }, judge: { verdict: { winner: "nobody", ranking: ["alpha"], reasons: "x" } } }, 4);
    const bad = await sb.puJson<GroupJson>(["group", "run", "write something", "--agents", "alpha,beta", "--aggregate", "judge", "--judge", "alpha"]);
    const failed = await finished(bad.groupId);
    expect(failed.phase).toBe("failed");
    expect(failed.failureReasons.join("\n")).toMatch(/verdict is invalid: the verdict's winner "nobody" is not a member/);
  });

  it("join first ends the group at the first member done; the others are stopped and recorded cancelled", async () => {
    await scenario("first", { members: { alpha: { lines: 1 }, beta: { hang: true } } }, 4);
    const started = await sb.puJson<GroupJson>(["group", "run", "race", "--agents", "alpha,beta", "--join", "first"]);
    const done = await finished(started.groupId);
    expect(done.phase).toBe("complete");
    expect(done.members.map((m) => [m.variant, m.state])).toEqual([["alpha", "done"], ["beta", "cancelled"]]);
    const beta = done.members.find((m) => m.variant === "beta")!;
    expect((await sb.agent(beta.agentId!)).live).toBe(false);
  });

  it("pause holds the pending launches; resume drains them; cancel stops the members", async () => {
    await scenario("pause", { default: { lines: 1 }, members: { beta: { hang: true } } }, 4);
    await sb.ok(["queue", "pause"]);
    onTestFinished(() => sb.pu(["queue", "resume"]).then(() => undefined));
    const held = await sb.puJson<GroupJson>(["group", "run", "wait for it", "--agents", "alpha,beta"]);
    // Paused, nothing launches: a request round trip later the members are still pending launches.
    await sb.ok(["queue"]);
    const still = await status(held.groupId);
    expect(still).toMatchObject({ phase: "launching", pendingLaunches: 2 });
    expect(still.members.every((m) => m.agentId === null)).toBe(true);
    await sb.ok(["queue", "resume"]);
    await waitFor("alpha done and beta running", async () => {
      const g = await status(held.groupId);
      return g.members.find((m) => m.variant === "alpha")?.state === "done" && g.members.find((m) => m.variant === "beta")?.state === "running";
    }, 60_000, 200);
    const cancelled = await sb.puJson<GroupJson>(["group", "cancel", held.groupId]);
    expect(cancelled.phase).toBe("cancelled");
    expect(cancelled.members.find((m) => m.variant === "beta")?.state).toBe("cancelled");
    expect((await sb.agent(cancelled.members.find((m) => m.variant === "beta")!.agentId!)).live).toBe(false);
  });

  it("a SIGKILLed daemon loses no group: the next one starts the interrupted member again and drains the rest", async () => {
    await scenario("sigkill", { default: { lines: 1, slowMs: 2500 } }, 1);
    const started = await sb.puJson<GroupJson>(["group", "run", "survive", "--agents", "alpha,beta", "--quorum", "2"]);
    await waitFor("the first member running", async () => (await status(started.groupId)).members.some((m) => m.state === "running"), 60_000);
    await sb.sigkillDaemon();
    const file = path.join(sb.base, "sigkill.json");
    await sb.ok(["health"], { env: { GROUP_TEST_SCENARIO: file } });
    const done = await finished(started.groupId);
    expect(done.phase).toBe("complete");
    expect(done.members.map((m) => m.state)).toEqual(["done", "done"]);
    // The interrupted member went on in the worktree it had.
    expect(new Set(done.members.map((m) => m.worktreeId)).size).toBe(2);
  });

  it("a daemon restart mid-group: each member goes on as one agent; the benched one it replaced is ended and cannot be played", async () => {
    await scenario("restart", { default: { lines: 1, slowMs: 6000 } }, 2);
    const started = await sb.puJson<GroupJson>(["group", "run", "outlive a restart", "--agents", "alpha,beta", "--quorum", "2"]);
    const running = await waitFor("both members running", async () => {
      const group = await status(started.groupId);
      return group.members.every((m) => m.state === "running" && m.agentId) ? group : undefined;
    }, 60_000);
    const before = running.members.map((m) => m.agentId!);
    // A graceful restart benches every running agent, the members too.
    await sb.ok(["daemon", "restart"], { env: { GROUP_TEST_SCENARIO: path.join(sb.base, "restart.json") } });
    const again = await waitFor("both members started again", async () => {
      const group = await status(started.groupId);
      return group.members.every((m) => m.agentId && !before.includes(m.agentId)) ? group : undefined;
    }, 60_000);
    const report = await sb.status();
    for (const member of again.members) {
      // One agent at work in the member's worktree; the one before it ended, replaced, not benched.
      const agents = Object.values(report.worktrees[member.worktreeId!]!.agents);
      expect(agents.filter((a) => a.suspended)).toEqual([]);
      expect(agents.filter((a) => a.status !== "broken").map((a) => a.id)).toEqual([member.agentId]);
      const old = agents.find((a) => before.includes(a.id));
      expect(old).toMatchObject({ status: "broken", finishedBy: "group", replacedBy: member.agentId });
    }
    expect(await sb.ok(["status"])).toContain(`replaced by ${again.members[0]!.agentId}`);
    for (const id of before) {
      const play = await sb.pu(["play", id]);
      expect(play.code).not.toBe(0);
      expect(play.stderr).toContain(`${id} is not suspended`);
    }
    const done = await finished(started.groupId);
    expect(done.members.map((m) => m.state)).toEqual(["done", "done"]);
    expect(allAgents(await sb.status()).filter((a) => a.suspended)).toEqual([]);
  });

  it("a workflow step fans out to a group: the ticket lends its slot (cap 1), then goes on with the aggregated output", async () => {
    await scenario("ticket", { default: { lines: 1 } }, 1);
    await sb.ok(["ticket", "create", "both ways", "--type", "TASK"]);
    const done = await waitFor("the ticket to be done", async () => {
      const shown = await sb.puJson<{ ticket: { state: string; history?: { event: string; note?: string }[] }; completed?: { summary: string } }>(["ticket", "show", "TASK-0001"]);
      return shown.ticket.state === "done" && shown.completed ? shown : undefined;
    }, 90_000, 250);
    expect(done.completed?.summary).toMatch(/Group g-[0-9a-f]+ \(multi_model, aggregate collect\): 2 member\(s\) done/);
    const group = stateFile().multi_agent_groups.find((g) => (g as { ticket_id?: string }).ticket_id === "TASK-0001");
    expect(group).toMatchObject({ step_type: "multi_model", phase: "complete", step_name: "explore" });
    expect(Object.keys(group!.individual_outputs).sort()).toEqual(["alpha", "beta"]);
    // {{OUTPUT_FILE}} in a group step names each member's own file, through its environment.
    expect(group!.individual_outputs.alpha?.output).toContain("try both ways into $PU_OUTPUT_FILE");
    expect(done.ticket.history?.map((h) => h.event)).toEqual(["dispatched", "group started", "step done", "step done", "done"]);
  });

  it("bad input: one line and the documented exit code, nothing started", async () => {
    const before = stateFile().multi_agent_groups.length;
    const refused = async (args: string[], code: number, message: RegExp) => {
      const run = await sb.pu(args);
      expect(run.code, `pu ${args.join(" ")}: ${run.stderr}`).toBe(code);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    };
    // Usage mistakes (2), caught by the CLI or by the daemon's checks.
    await refused(["group", "run", "x", "--agents", "alpha"], 2, /two --prompt-file variants/);
    await refused(["group", "run", "x", "--agents", "alpha,beta", "--quorum", "zero"], 2, /--quorum expects a whole number/);
    await refused(["group", "run", "x", "--agents", "alpha,beta", "--aggregate", "gate"], 2, /--aggregate gate needs --gate/);
    await refused(["group", "run", "x", "--agents", "alpha,beta", "--model", "gamma=m"], 2, /gamma is not one of --agents/);
    await refused(["group", "run", "x", "--agents", "alpha,nosuch"], 2, /unknown agent type 'nosuch'/);
    await refused(["group", "run", "x", "--agents", "alpha,beta", "--quorum", "3"], 2, /quorum 3 is more than the group's 2 members/);
    await refused(["group", "run", "x", "--agents", "alpha,beta", "--base", "nosuchbranch"], 2, /base ref "nosuchbranch" does not exist/);
    // A program that is not installed: refused now, not a group that fails later (1).
    await refused(["group", "run", "x", "--agents", "alpha,ghost"], 1, /agent type 'ghost' cannot start: command 'no-such-agent-cli' not found on PATH/);
    // Not there (3).
    await refused(["group", "status", "g-000000"], 3, /no group g-000000/);
    const any = (await sb.puJson<{ groups: GroupJson[] }>(["group", "list"])).groups[0]!;
    await refused(["group", "diff", any.groupId, "nosuch"], 3, /has no member nosuch/);
    // Not in a state for it (1).
    await refused(["group", "cancel", any.groupId], 1, /is already (complete|failed|cancelled)/);
    expect(stateFile().multi_agent_groups).toHaveLength(before);
  });
});
