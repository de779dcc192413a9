// Tokens and cost of the real Claude Code, Codex and OpenCode, read by pu from the CLIs' own
// records: the test model server reports chosen usage for each scripted answer, and pu must
// show exactly that — each answer once (Claude writes an answer with text and a tool call as
// two lines of one message), Codex's running totals as their growth, OpenCode's reasoning
// inside output — at list prices for a known model and `?` for one without a price, unchanged
// after `pu kill` and a daemon restart. Then a budget stops a running multi-call turn before
// its next model call.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageFigures } from "@pu/ipc/protocol";
import { startModelServer, type ModelServer } from "../model-server/server.js";
import { agentHome, type RealAgent } from "../real-agents/homes.js";
import { RealAgentSandbox } from "../real-agents/sandbox.js";
import { allAgents, REPO_ROOT } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

const TURN_TIMEOUT_MS = 90_000;
// The first real CLI of a fresh-clone run once took over 90 s to send its first request while the
// heaviest e2e files ran beside it (it did answer later); the first turn of each CLI gets longer.
const FIRST_TURN_TIMEOUT_MS = 180_000;
const STEP_TIMEOUT_MS = 4 * 60_000;

type Figures = UsageFigures;

// What each API's usage means once normalized: the server reports in=100 cache_read=300
// cache_write=40 out=20 reasoning=3 per answer. Claude's Messages API reports all four apart
// (its output holds any thinking); the Responses and Chat APIs fold the cache into input (and
// have no cache write, so the 40 are plain input) and reasoning into output.
const FIRST_CALL: Record<RealAgent, Omit<Figures, "calls" | "costUsd">> = {
  claude: { input: 100, cacheRead: 300, cacheWrite: 40, output: 20, reasoning: 0 },
  codex: { input: 140, cacheRead: 300, cacheWrite: 0, output: 23, reasoning: 3 },
  opencode: { input: 140, cacheRead: 300, cacheWrite: 0, output: 23, reasoning: 3 },
};
const SECOND_TURN = { input: 1000, output: 200 };

// Claude runs a model the offline price table knows; Codex and OpenCode run "fake-model",
// priced through `.pu/config.yaml` only once the test adds it.
const SONNET = { input: 3, cacheWrite: 3.75, cacheRead: 0.3, output: 15 };
const FAKE_PRICE = { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2.5 };

function costAt(price: typeof SONNET, f: Omit<Figures, "calls" | "costUsd">): number {
  return (f.input * price.input + f.cacheRead * price.cacheRead + f.cacheWrite * price.cacheWrite + f.output * price.output) / 1_000_000;
}

function times(f: Omit<Figures, "calls" | "costUsd">, n: number) {
  return { input: f.input * n, cacheRead: f.cacheRead * n, cacheWrite: f.cacheWrite * n, output: f.output * n, reasoning: f.reasoning * n };
}

async function setUp(agent: RealAgent, server: ModelServer): Promise<RealAgentSandbox> {
  const sandbox = new RealAgentSandbox(`pu-usage-${agent}-`);
  const dir = path.join(sandbox.base, "agent-home");
  mkdirSync(dir);
  const home = agentHome(agent, { dir, serverUrl: server.url, trustedDirs: [sandbox.root] });
  sandbox.agentEnv = { ...home.env, SHELL: "/bin/bash" };
  await sandbox.ok(["init"]);
  return sandbox;
}

/** A model server and a sandbox whose agents reach it, for one describe block; torn down after it, leaving nothing running. */
function withRealAgent(agent: RealAgent): { server: () => ModelServer; sandbox: () => RealAgentSandbox } {
  let server: ModelServer | undefined;
  let sandbox: RealAgentSandbox | undefined;
  beforeAll(async () => {
    server = await startModelServer({ logFile: process.env.PU_MODEL_SERVER_LOG });
    sandbox = await setUp(agent, server);
  }, STEP_TIMEOUT_MS);
  afterAll(async () => {
    const leftovers = sandbox ? await sandbox.teardown() : [];
    await server?.close();
    expect(leftovers).toEqual([]);
  }, STEP_TIMEOUT_MS);
  return { server: () => server!, sandbox: () => sandbox! };
}

/** Whether a Claude session file under this home holds `text` (an answer Claude has recorded). */
function sessionFileSays(home: string, text: string): boolean {
  const projects = path.join(home, ".claude", "projects");
  if (!existsSync(projects)) return false;
  for (const folder of readdirSync(projects)) {
    for (const file of readdirSync(path.join(projects, folder))) {
      if (file.endsWith(".jsonl") && readFileSync(path.join(projects, folder, file), "utf8").includes(text)) return true;
    }
  }
  return false;
}

const usageOf = async (sandbox: RealAgentSandbox, agentId: string) => (await sandbox.agent(agentId)).usage as Figures | null | undefined;

for (const agent of ["claude", "codex", "opencode"] as const) {
  describe(`usage of real ${agent}`, () => {
    const suite = withRealAgent(agent);
    let server: ModelServer;
    let sandbox: RealAgentSandbox;
    beforeAll(() => ({ server, sandbox } = { server: suite.server(), sandbox: suite.sandbox() }));
    let agentId = "";
    const first = FIRST_CALL[agent];

    it("counts the spawn prompt's turn (a tool call with text, then the answer) call by call", async () => {
      const prompt = "NOTE: running it now RUN: echo counted USAGE: in=100 out=20 cache_read=300 cache_write=40 reasoning=3 SAY: first answer";
      const extra = agent === "claude" ? ["--", "--model", "claude-sonnet-4-5"] : [];
      agentId = (await sandbox.spawnAgent([prompt, "--agent", agent, "--name", `usage-${agent}`, ...extra])).agentId;
      await server.waitForRequest((r) => r.replyText === "first answer" && r.finishedAt !== undefined, FIRST_TURN_TIMEOUT_MS).catch(async (error) => {
        // What the CLI shows instead (a dialog, an error) says why no request came.
        console.log(`[usage ${agent}] screen:\n${await sandbox.ok(["logs", agentId, "--screen"]).catch((e) => String(e))}`);
        throw error;
      });
      const usage = await waitFor(`${agent}'s two calls in pu status`, async () => {
        const u = await usageOf(sandbox, agentId);
        return u && u.calls >= 2 ? u : undefined;
      }, TURN_TIMEOUT_MS, 250);
      expect({ ...usage, costUsd: undefined }).toEqual({ ...times(first, 2), calls: 2, costUsd: undefined });
      if (agent === "claude") expect(usage.costUsd).toBeCloseTo(costAt(SONNET, times(first, 2)), 10);
      else expect(usage.costUsd).toBeNull();
    }, FIRST_TURN_TIMEOUT_MS + STEP_TIMEOUT_MS);

    it("a second turn adds exactly its own usage", async () => {
      await sandbox.waitForAgent(agentId, "waiting after its first turn", (a) => a.status === "waiting", TURN_TIMEOUT_MS);
      await sandbox.ok(["send", agentId, "USAGE: in=1000 out=200 SAY: second answer"]);
      const usage = await waitFor(`${agent}'s third call in pu status`, async () => {
        const u = await usageOf(sandbox, agentId);
        return u && u.calls >= 3 ? u : undefined;
      }, TURN_TIMEOUT_MS, 250);
      const expected = times(first, 2);
      expected.input += SECOND_TURN.input;
      expected.output += SECOND_TURN.output;
      expect({ ...usage, costUsd: undefined }).toEqual({ ...expected, calls: 3, costUsd: undefined });
    }, STEP_TIMEOUT_MS);

    it("prices an unknown model from config, and keeps the figures after kill and a daemon restart", async () => {
      const expected = times(first, 2);
      expected.input += SECOND_TURN.input;
      expected.output += SECOND_TURN.output;
      if (agent !== "claude") {
        const table = await sandbox.ok(["usage"]);
        expect(table).toMatch(new RegExp(`${agentId}\\s.*\\?\\s*$`, "m"));
        writeFileSync(path.join(sandbox.root, ".pu/config.yaml"), `prices:\n  fake-model: ${JSON.stringify(FAKE_PRICE)}\n`);
        // Prices are read again within 10 s.
        await waitFor("the configured price applied", async () => ((await usageOf(sandbox, agentId))?.costUsd ?? null) !== null, 20_000, 500);
      }
      const cost = agent === "claude" ? costAt(SONNET, expected) : costAt(FAKE_PRICE, expected);
      await sandbox.ok(["kill", agentId]);
      const afterKill = await sandbox.puJson<{ rows: (Figures & { key: string })[]; total: Figures }>(["usage"]);
      expect(afterKill.rows).toHaveLength(1);
      expect(afterKill.rows[0]).toMatchObject({ key: agentId, ...expected, calls: 3 });
      expect(afterKill.total.costUsd).toBeCloseTo(cost, 10);
      // The exit also went into state.json's per-tool statistics (pu stats), read to the end first.
      const stats = await waitFor("the exit in pu stats", async () => {
        const doc = await sandbox.puJson<{ rows: { tool: string; tokens: number | null; costUsd: number | null }[] }>(["stats"]);
        return doc.rows.find((r) => r.tool === agent && r.tokens !== null);
      }, 20_000, 250);
      expect(stats.tokens).toBe(expected.input + expected.cacheRead + expected.cacheWrite + expected.output);

      await sandbox.ok(["daemon", "stop"]);
      const afterRestart = await sandbox.puJson<{ rows: (Figures & { key: string })[]; total: Figures }>(["usage", "--by", "model"]);
      expect(afterRestart.rows.map((r) => r.key)).toEqual([agent === "claude" ? "claude-sonnet-4-5" : "fake-model"]);
      expect(afterRestart.total).toMatchObject({ ...expected, calls: 3 });
      expect(afterRestart.total.costUsd).toBeCloseTo(cost, 10);
      const byDay = await sandbox.puJson<{ rows: { key: string }[] }>(["usage", "--by", "day", "--since", "today"]);
      expect(byDay.rows.map((r) => r.key)).toEqual([new Date().toISOString().slice(0, 10)]);
    }, STEP_TIMEOUT_MS);

    it.runIf(agent === "claude")("a daemon SIGKILLed right after a turn's record is written loses none of it", async () => {
      const recorded = path.join(sandbox.base, "agent-home");
      const crashId = (await sandbox.spawnAgent(["USAGE: in=700 out=70 SAY: before the crash", "--agent", agent, "--root", "--name", "crash-usage", "--", "--model", "claude-sonnet-4-5"])).agentId;
      // Killed the moment Claude has written the answer to its session file: before any batched
      // write of usage.json could name that file, so only what pu wrote at once can find it again.
      await waitFor("the answer in Claude's session file", () => (sessionFileSays(recorded, "before the crash") ? true : undefined), FIRST_TURN_TIMEOUT_MS, 20);
      await sandbox.sigkillDaemon();
      const row = await waitFor("the crashed daemon's turn in pu usage", async () => {
        const doc = await sandbox.puJson<{ rows: (Figures & { key: string })[] }>(["usage"]);
        return doc.rows.find((r) => r.key === crashId && r.calls > 0);
      }, 30_000, 250).catch((error: Error) => {
        const usageFile = path.join(sandbox.root, ".pu", "usage.json");
        throw new Error(`${error.message}\nusage.json: ${existsSync(usageFile) ? readFileSync(usageFile, "utf8").slice(0, 3000) : "none"}\nlog: ${readFileSync(path.join(sandbox.home, "daemon.log"), "utf8").split("\n").filter((l) => /usage|recover|crash|start/.test(l)).slice(-20).join("\n")}`);
      });
      expect(row).toMatchObject({ input: 700, output: 70, cacheRead: 0, cacheWrite: 0, calls: 1 });
    }, FIRST_TURN_TIMEOUT_MS + STEP_TIMEOUT_MS);
  });
}

describe("a budget", () => {
  const suite = withRealAgent("claude");
  let server: ModelServer;
  let sandbox: RealAgentSandbox;
  beforeAll(() => ({ server, sandbox } = { server: suite.server(), sandbox: suite.sandbox() }));

  /** The first member of the ticket's group that ended cancelled (not started). */
  const memberNotStarted = (ticketId: string, what: string) =>
    waitFor(what, async () => {
      const { groups } = await sandbox.puJson<{ groups: { ticketId?: string | null; members: { state: string; reason: string | null }[] }[] }>(["group", "list"]);
      return groups.find((g) => g.ticketId === ticketId)?.members.find((m) => m.state === "cancelled");
    }, 3 * TURN_TIMEOUT_MS, 1000).catch(async (error: Error) => {
      // The queue says why a ticket did not start; the group list what its members did.
      console.log(await sandbox.ok(["queue"]), await sandbox.ok(["group", "list", "--json"]), await sandbox.ok(["ticket", "show", ticketId]));
      throw error;
    });

  /** A ticket of a workflow written for it (trusted), one queue slot at a time: its id. */
  const queueTicket = async (type: string, workflow: string[], title: string, flags: string[] = []) => {
    writeFileSync(path.join(sandbox.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    mkdirSync(path.join(sandbox.root, ".pu/workflows"), { recursive: true });
    writeFileSync(path.join(sandbox.root, `.pu/workflows/${type}.yaml`), ["steps:", ...workflow, ""].join("\n"));
    await sandbox.ok(["trust"]);
    return (await sandbox.puJson<{ ticket: { id: string } }>(["ticket", "create", title, "--type", type, ...flags])).ticket.id;
  };

  it("stops a running multi-call turn before its next model call, keeps the agent, and refuses pu send until raised", async () => {
    // The first call alone reports 1,100 tokens; its tool runs 8 s, and a second call would follow it.
    const prompt = "RUN: sleep 8 RUN: echo past-budget > past-budget.txt USAGE: in=1000 out=100 SAY: should not be reached";
    const spawned = await sandbox.spawnAgent([prompt, "--agent", "claude", "--name", "budgeted", "--max-tokens", "1000"]);
    const firstCall = await server.waitForRequest((r) => r.command === "sleep 8" && r.finishedAt !== undefined, TURN_TIMEOUT_MS);
    const stopped = await sandbox.waitForAgent(spawned.agentId, "to read budget", (a) => (a.budget as { exceededAt?: string } | undefined)?.exceededAt !== undefined, 20_000);
    // Within 2 s of the record that crossed it (the CLI writes it as the answer ends).
    expect(Date.parse((stopped.budget as { exceededAt: string }).exceededAt) - firstCall.finishedAt!).toBeLessThan(3_000);
    expect(stopped.live).toBe(true);
    // The sleep would have ended 8 s after the first call; the turn's next call never comes.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    expect(server.requests.filter((r) => r.command === "echo past-budget > past-budget.txt")).toEqual([]);
    expect(existsSync(path.join(spawned.cwd, "past-budget.txt"))).toBe(false);
    const table = await sandbox.ok(["status"]);
    expect(table).toMatch(new RegExp(`${spawned.agentId}.*budget`));

    const refused = await sandbox.pu(["send", spawned.agentId, "SAY: go on"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(`pu budget ${spawned.agentId} --max-tokens`);

    await sandbox.ok(["budget", spawned.agentId, "--max-tokens", "100000"]);
    const before = server.requests.length;
    await sandbox.ok(["send", spawned.agentId, "SAY: raised"]);
    await server.waitForRequest((r) => r.seq > before && r.replyText === "raised", TURN_TIMEOUT_MS);
    const after = await sandbox.agent(spawned.agentId);
    expect(after.budget).toMatchObject({ maxTokens: 100000 });
    expect((after.budget as { exceededAt?: string }).exceededAt).toBeUndefined();
  }, STEP_TIMEOUT_MS);

  it("a step over its budget: the turn is interrupted and the ticket waits for a decision", async () => {
    mkdirSync(path.join(sandbox.root, ".pu/workflows"), { recursive: true });
    writeFileSync(
      path.join(sandbox.root, ".pu/workflows/SPEND.yaml"),
      'steps:\n  - name: work\n    agent: claude\n    prompt: "RUN: sleep 8 RUN: echo past-step-budget > past.txt USAGE: in=1000 out=100 SAY: unreachable"\n    max_tokens: 1000\n',
    );
    await sandbox.ok(["trust"]);
    const created = await sandbox.puJson<{ ticket: { id: string } }>(["ticket", "create", "spend a little", "--type", "SPEND", "--max-cost", "50"]);
    const review = await waitFor("the ticket to wait for a decision", async () => {
      const list = await sandbox.puJson<{ reviews: { ticketId: string; lastMessage: string | null; agentId: string | null }[] }>(["review", "list"]);
      return list.reviews.find((r) => r.ticketId === created.ticket.id && r.lastMessage);
    }, TURN_TIMEOUT_MS, 500).catch(async (error) => {
      console.log(await sandbox.ok(["queue"]), await sandbox.ok(["status"]), JSON.stringify(server.requests.map((r) => [r.reply, r.command, r.replyText, (r.lastUserText ?? "").slice(-120)])));
      throw error;
    });
    expect(review.lastMessage).toBe("needs a decision: step work: stopped at its budget (max 1000 tokens / $50)");
    expect(server.requests.filter((r) => r.command === "echo past-step-budget > past.txt")).toEqual([]);
    const agent = await sandbox.agent(review.agentId!);
    expect(agent.live).toBe(true);
    await sandbox.ok(["ticket", "cancel", created.ticket.id]);
  }, STEP_TIMEOUT_MS);

  it("a workflow's group step takes the step's budget as the group's: past it, no further member starts", async () => {
    // One member at a time, so the second one's start comes after the first one spent the budget.
    const ticketId = await queueTicket(
      "GSPEND",
      [
        "  - name: fanout",
        "    type: multi_prompt",
        "    agent: claude",
        '    prompts: ["variant one", "variant two"]',
        '    prompt: "RUN: sleep 8 RUN: echo past-group-step > gs.txt USAGE: in=1000 out=100 SAY: unreachable"',
        "    max_tokens: 1000",
      ],
      "fan out past a budget",
    );
    const cancelled = await memberNotStarted(ticketId, "a member of the step's group not started for its budget");
    expect(cancelled.reason).toMatch(/^not started: the group's budget is spent \(max 1000 tokens, spent 1100 tokens/);
    expect(server.requests.filter((r) => r.command === "echo past-group-step > gs.txt")).toEqual([]);
    await sandbox.ok(["ticket", "cancel", ticketId]).catch(() => "");
  }, 4 * TURN_TIMEOUT_MS);

  it("a ticket's budget counts its earlier steps: a group step after them gets only what is left", async () => {
    // The first step spends 550 of the ticket's 1,000 tokens; the group's first call reports 550 more.
    const ticketId = await queueTicket(
      "TSPEND",
      [
        "  - name: first",
        "    agent: claude",
        '    prompt: "USAGE: in=500 out=50 SAY: first step done"',
        "  - name: fanout",
        "    type: multi_prompt",
        "    agent: claude",
        '    prompts: ["variant one", "variant two"]',
        '    prompt: "RUN: sleep 8 RUN: echo past-ticket-budget > tb.txt USAGE: in=500 out=50 SAY: unreachable"',
      ],
      "two steps on one budget",
      ["--max-tokens", "1000"],
    );
    const cancelled = await memberNotStarted(ticketId, "a member of the group not started for the ticket's budget");
    // The group's budget was what the first step left (450), not the ticket's whole 1,000.
    expect(cancelled.reason).toMatch(/^not started: the group's budget is spent \(max 450 tokens, spent 550 tokens/);
    expect(server.requests.filter((r) => r.command === "echo past-ticket-budget > tb.txt")).toEqual([]);
    await sandbox.ok(["ticket", "cancel", ticketId]).catch(() => "");
  }, 4 * TURN_TIMEOUT_MS);

  it("a ticket approved past its budget: its next group step starts no member and waits for a decision again", async () => {
    const ticketId = await queueTicket(
      "OSPEND",
      [
        "  - name: first",
        "    agent: claude",
        '    prompt: "USAGE: in=1000 out=100 SAY: over already"',
        "  - name: fanout",
        "    type: multi_prompt",
        "    agent: claude",
        '    prompts: ["variant one", "variant two"]',
        '    prompt: "RUN: echo past-spent-ticket > os.txt SAY: unreachable"',
      ],
      "over before its group",
      ["--max-tokens", "1000"],
    );
    // The first step's one call crosses the budget as the turn ends: when pu reads the record
    // before the turn's end, the step waits for a decision first, and the person approves it.
    let approved = false;
    const again = await waitFor("the group step to wait before it starts", async () => {
      const list = await sandbox.puJson<{ reviews: { ticketId: string; lastMessage: string | null }[] }>(["review", "list"]);
      const review = list.reviews.find((r) => r.ticketId === ticketId && r.lastMessage);
      if (review && !approved && review.lastMessage?.startsWith("needs a decision: step first: stopped at its budget")) {
        approved = true;
        await sandbox.ok(["review", "approve", ticketId]);
        return undefined;
      }
      return review?.lastMessage?.includes("step fanout") ? review : undefined;
    }, 2 * TURN_TIMEOUT_MS, 500).catch(async (error: Error) => {
      console.log(await sandbox.ok(["queue"]), await sandbox.ok(["ticket", "show", ticketId]));
      throw error;
    });
    expect(again.lastMessage).toMatch(/^needs a decision: step fanout: stopped at its budget \(the ticket's max 1000 tokens, spent 1100 tokens(, \$[\d.]+)? by its earlier steps\)$/);
    const { groups } = await sandbox.puJson<{ groups: { ticketId?: string | null }[] }>(["group", "list"]);
    expect(groups.filter((g) => g.ticketId === ticketId)).toEqual([]);
    expect(server.requests.filter((r) => r.command === "echo past-spent-ticket > os.txt")).toEqual([]);
    await sandbox.ok(["ticket", "cancel", ticketId]).catch(() => "");
  }, 3 * TURN_TIMEOUT_MS);

  it("a group over its budget: the running member is interrupted and no further member starts", async () => {
    // One member at a time, so the second one's start comes after the first one spent the budget.
    writeFileSync(path.join(sandbox.home, "config.yaml"), "queue:\n  maxParallel: 1\n");
    const variants = ["one", "two"].map((name) => {
      const file = path.join(sandbox.base, `variant-${name}.md`);
      writeFileSync(file, `variant ${name}`);
      return ["--prompt-file", file];
    });
    const prompt = "RUN: sleep 8 RUN: echo past-group-budget > g.txt USAGE: in=1000 out=100 SAY: unreachable";
    const started = await sandbox.puJson<{ groupId: string }>(["group", "run", prompt, "--agent", "claude", ...variants.flat(), "--max-tokens", "1000"]);
    const ended = await waitFor("the group to end", async () => {
      const group = await sandbox.puJson<{ phase: string; members: { variant: string; state: string; reason: string | null; usage?: { calls: number } | null }[] }>(["group", "status", started.groupId]);
      return ["complete", "failed", "cancelled"].includes(group.phase) ? group : undefined;
    }, 3 * TURN_TIMEOUT_MS, 1000);
    const states = ended.members.map((m) => [m.state, m.reason ?? ""]);
    expect(states.filter(([state]) => state === "cancelled")).toEqual([["cancelled", expect.stringMatching(/^not started: the group's budget is spent \(max 1000 tokens, spent 1100 tokens/)]]);
    expect(ended.members.find((m) => m.state !== "cancelled")?.usage?.calls).toBe(1);
    expect(server.requests.filter((r) => r.command === "echo past-group-budget > g.txt")).toEqual([]);
    const compare = await sandbox.ok(["group", "compare", started.groupId]);
    expect(compare).toMatch(/COST/);
    await sandbox.ok(["group", "cancel", started.groupId]).catch(() => "");
  }, 4 * TURN_TIMEOUT_MS);

  it("a plan over its budget: the explorer's turn is interrupted, no further turn or role agent starts, and the plan fails saying why", async () => {
    // The project's own explorer prompt (trusted below): a multi-call turn whose first call spends the budget.
    mkdirSync(path.join(sandbox.root, ".pu/templates"), { recursive: true });
    writeFileSync(path.join(sandbox.root, ".pu/templates/plan-explorer.md"), "RUN: sleep 8 RUN: echo past-plan-budget > {{OUTPUT_FILE}} USAGE: in=1000 out=100 SAY: unreachable\n");
    writeFileSync(path.join(sandbox.root, ".pu/config.yaml"), "plan:\n  agents: { explorer: claude, planner: claude, worker: claude, verifier: claude }\n  retries: 2\n");
    await sandbox.ok(["trust"]);
    const started = await sandbox.puJson<{ sessionId: string }>(["plan", "start", "a goal past its budget", "--auto", "--max-tokens", "1000"]);
    type PlanJson = { phase: string; failure: string | null; usage?: { calls: number } | null; options: { max_tokens?: number } };
    const failed = await waitFor("the plan to fail at its budget", async () => {
      const plan = await sandbox.puJson<PlanJson>(["plan", "status", started.sessionId]);
      return plan.phase === "FAILED" ? plan : undefined;
    }, 2 * TURN_TIMEOUT_MS, 1000);
    expect(failed.failure).toMatch(/the plan's budget is spent \(max 1000 tokens, spent 1100 tokens.*\): .* is given no further turn/);
    expect(failed.usage?.calls).toBe(1);
    expect(failed.options.max_tokens).toBe(1000);
    // The turn's next call never came, and no planner was started.
    expect(server.requests.filter((r) => (r.command ?? "").startsWith("echo past-plan-budget"))).toEqual([]);
    const agents = await sandbox.status();
    expect(allAgents(agents).map((a) => a.name).filter((name) => String(name).includes("planner"))).toEqual([]);
    expect(await sandbox.ok(["plan", "show", started.sessionId])).toMatch(/cost .*; budget max 1\.0k tokens/);
  }, 3 * TURN_TIMEOUT_MS);

  it("a plan's workers over its budget: a worker still working is interrupted (its next call never made), no worker's task is resolved once it is spent, and the plan fails saying why", async () => {
    // Two workers at once (the real Claude Code), with room to spare for agents the tests above left
    // waiting (they hold queue slots); the other roles are the scripted plan role.
    writeFileSync(path.join(sandbox.home, "config.yaml"), "queue:\n  maxParallel: 10\n");
    // Long waits on both sides: under a loaded fresh-clone run one Claude Code may send its first
    // request 20 s after the other (seen once); the budget must still be spent during the long call.
    const waitALong = "touch started.txt && sleep 20 && sleep 20 && sleep 20 && sleep 20";
    const scenario = path.join(sandbox.base, "plan-budget-scenario.json");
    writeFileSync(scenario, JSON.stringify({
      tasks: [
        { id: "spend", subject: "spend the budget", description: "RUN: sleep 20 && sleep 20 USAGE: in=550 out=50 SAY: spent the budget", blockedBy: [], criteria: ["spent"] },
        { id: "long", subject: "work a long while", description: `RUN: ${waitALong} RUN: echo past-plan-budget > pw.txt SAY: unreachable`, blockedBy: [], criteria: ["never reached"] },
      ],
      slowMs: 100,
    }));
    const planRole = `env PLAN_TEST_SCENARIO=${scenario} ${process.execPath} ${path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs")}`;
    writeFileSync(path.join(sandbox.root, ".pu/config.yaml"), `agents:\n  planbot: { command: ${JSON.stringify(planRole)} }\nplan:\n  agents: { explorer: planbot, planner: planbot, worker: claude, verifier: planbot }\n`);
    await sandbox.ok(["trust"]);
    const started = await sandbox.puJson<{ sessionId: string }>(["plan", "start", "two tasks, one budget", "--auto", "--skip-verify", "--max-tokens", "1000"]);
    type PlanJson = { phase: string; failure: string | null; tasks: { id: string; status: string }[] };
    const ended = await waitFor("the plan to end", async () => {
      const plan = await sandbox.puJson<PlanJson>(["plan", "status", started.sessionId]);
      return ["COMPLETE", "FAILED", "CANCELLED"].includes(plan.phase) ? plan : undefined;
    }, 3 * TURN_TIMEOUT_MS, 1000);
    const spentAt = server.requests.find((r) => r.replyText === "spent the budget")?.receivedAt;
    const sleepingSince = server.requests.find((r) => r.command === waitALong)?.receivedAt;
    // The budget was spent while the other worker was in its 80 s tool call (started within the
    // first's 40 s one), which was cut short: its echo never asked for.
    const evidence = await sandbox.puJson<{ evidenceLog: { task_id?: string; type: string; summary?: string }[] }>(["plan", "evidence", started.sessionId]);
    expect(spentAt! - sleepingSince!, JSON.stringify({ spentAt, sleepingSince, evidence })).toBeLessThan(70_000);
    expect(server.requests.filter((r) => r.command === "echo past-plan-budget > pw.txt")).toEqual([]);
    // The plan fails for its budget; neither task is resolved (both workers' turns ended with it spent), nothing merged.
    expect(ended.phase).toBe("FAILED");
    expect(ended.failure).toMatch(/^the plan's budget is spent \(max 1000 tokens, spent \d+ tokens/);
    expect(ended.tasks.map((t) => [t.id, t.status]).sort()).toEqual([["long", "failed"], ["spend", "failed"]]);
    expect(evidence.evidenceLog.filter((e) => e.type === "task_failed").map((e) => e.task_id).sort()).toEqual(["long", "spend"]);
    for (const e of evidence.evidenceLog.filter((e) => e.type === "task_failed")) expect(e.summary).toMatch(/^not resolved: the plan's budget is spent \(max 1000 tokens, spent \d+ tokens.*\) as its worker's turn ended; its worktree keeps what was done$/);
    // The long worker's tool call did run (not held at a question): its worktree keeps its file.
    const worktrees = Object.entries((await sandbox.status()).worktrees as Record<string, { name: string; path: string }>);
    const long = worktrees.find(([, w]) => w.name === `plan-${started.sessionId}-long`)?.[1];
    expect(existsSync(path.join(long!.path, "started.txt"))).toBe(true);
    for (const [worktreeId, w] of worktrees) if (w.name.startsWith(`plan-${started.sessionId}-`)) await sandbox.ok(["clean", "--worktree", worktreeId, "--force"]);
  }, 3 * TURN_TIMEOUT_MS + 60_000);

  it("a spent daily budget pauses the queue with a problem line", async () => {
    // Today this project has already used well over 1,000 tokens (the test above).
    writeFileSync(path.join(sandbox.root, ".pu/config.yaml"), "budgets:\n  daily: { maxTokens: 1000 }\n");
    const queue = await waitFor("the queue paused for the daily budget", async () => {
      const q = await sandbox.puJson<{ paused: boolean; problems: { message: string }[] }>(["queue"]);
      return q.paused ? q : undefined;
    }, 30_000, 500);
    expect(queue.problems.map((p) => p.message)).toEqual([expect.stringMatching(/^the daily budget \(max 1000 tokens\) is spent today \(\d+ tokens.*\): the queue is paused/)]);
    await sandbox.ok(["queue", "resume"]);
    const resumed = await sandbox.puJson<{ paused: boolean; problems: unknown[] }>(["queue"]);
    expect(resumed).toMatchObject({ paused: false, problems: [] });
  }, STEP_TIMEOUT_MS);
});

