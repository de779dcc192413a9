// The real Claude Code, Codex and OpenCode, installed at pinned versions, each doing whole
// turns under pu against the local test model server (no account, no network). One
// describe per CLI, its steps in order on one agent: the spawn prompt starts a turn, the
// scripted shell command runs in the worktree, status is streaming while the model thinks
// and waiting after the answer, `pu send` starts a second turn, `pu kill` leaves nothing.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startModelServer, type LoggedRequest, type ModelServer } from "../model-server/server.js";
import { agentHome, type RealAgent } from "../real-agents/homes.js";
import { processesOfAgent, stillRunning, type AgentProcess } from "../real-agents/processes.js";
import { RealAgentSandbox } from "../real-agents/sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

// A slow shared machine adds to every CLI's start-up, so each wait is generous; how fast
// pu reads a turn's end is measured by `pnpm bench` (bench/real-agents.mjs), not here.
const TURN_TIMEOUT_MS = 90_000;
const WAITING_TIMEOUT_MS = 75_000;
const THINK_MS = 5_000;
// The spawn prompt's turn (a tool call, then an answer) must be read as over as soon as a
// later one: pu took 5–6 s for it once. The bound leaves room for a loaded machine and for
// the `pu status` processes that poll it; `pnpm bench` has the tight figure (≤ 1 s).
const FIRST_TURN_WAITING_MAX_MS = 4_000;
// A step can wait for a turn and then for the agent to read waiting, twice for a trigger's two steps.
const STEP_TIMEOUT_MS = 4 * 60_000;

/** Live status of the agent, sampled back to back for as long as the model's answer is in flight. */
async function statusWhileInFlight(sandbox: RealAgentSandbox, agentId: string, request: LoggedRequest, onFirst?: () => void): Promise<string[]> {
  const samples: string[] = [];
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  while (request.finishedAt === undefined && Date.now() < deadline) {
    const status = (await sandbox.agent(agentId)).status;
    // A sample that came back after the answer ended may have been read after it too
    // (a `pu status` takes a while on a loaded machine): it proves nothing either way.
    if (request.finishedAt !== undefined) break;
    samples.push(status);
    if (samples.length === 1) onFirst?.();
  }
  return samples;
}

function measured(agent: RealAgent, what: string, ms: number): void {
  console.log(`[real ${agent}] ${what}: ${(ms / 1000).toFixed(1)} s`);
}

for (const agent of ["claude", "codex", "opencode"] as const) {
  describe(`real ${agent} under pu`, () => {
    let server: ModelServer;
    let sandbox: RealAgentSandbox;
    let agentId = "";
    let cwd = "";
    let lastTextAnswer: LoggedRequest | undefined;

    const sawUserText = (text: string) => (r: LoggedRequest) => r.api !== "other" && r.tools.length > 0 && (r.lastUserText ?? "").includes(text);
    const answeredText = (text: string) => (r: LoggedRequest) => r.reply === "text" && r.replyText === text && r.finishedAt !== undefined;

    beforeAll(async () => {
      // PU_MODEL_SERVER_LOG=FILE keeps every request (one JSON line each) for debugging a run.
      server = await startModelServer({ logFile: process.env.PU_MODEL_SERVER_LOG });
      sandbox = new RealAgentSandbox(`pu-real-${agent}-`);
      const dir = path.join(sandbox.base, "agent-home");
      mkdirSync(dir);
      const home = agentHome(agent, { dir, serverUrl: server.url, trustedDirs: [sandbox.root] });
      // Claude's Bash tool wants bash or zsh; the sandbox's default SHELL is /bin/sh.
      sandbox.agentEnv = { ...home.env, SHELL: "/bin/bash" };
      await sandbox.ok(["init"]);
    }, STEP_TIMEOUT_MS);

    afterAll(async () => {
      const leftovers = sandbox ? await sandbox.teardown() : [];
      await server?.close();
      expect(leftovers).toEqual([]);
    }, STEP_TIMEOUT_MS);

    it("delivers the spawn prompt: the model server gets it and the scripted command runs in the worktree", async () => {
      const prompt = `THINK: ${THINK_MS} RUN: echo made-by-${agent} > real-made.txt PACE: 250 SAY: first answer`;
      const spawned = await sandbox.spawnAgent([prompt, "--agent", agent, "--name", `real-${agent}`]);
      agentId = spawned.agentId;
      cwd = spawned.cwd;
      expect(spawned.worktreePath).toBe(cwd);
      const startedAt = Date.now();

      const first = await server.waitForRequest(sawUserText("RUN: echo made-by"), TURN_TIMEOUT_MS);
      measured(agent, "spawn to first model request", first.receivedAt - startedAt);
      expect(first.reply).toBe("tool_call");

      // Sampled through the whole thinking delay: never waiting while the model has not answered.
      const samples = await statusWhileInFlight(sandbox, agentId, first, () => sandbox.saveFixture(agentId, `${agent}-busy.bin`));
      expect(samples.length).toBeGreaterThan(0);
      expect(samples.filter((s) => s !== "streaming")).toEqual([]);

      const made = path.join(cwd, "real-made.txt");
      await waitFor(`${made} written by ${agent}'s shell tool`, () => existsSync(made), TURN_TIMEOUT_MS, 200);
      expect(readFileSync(made, "utf8").trim()).toBe(`made-by-${agent}`);
    }, STEP_TIMEOUT_MS);

    it("reads streaming while the model thinks after the tool call, and waiting as soon as the answer ends", async () => {
      // The answer after the tool result also thinks THINK_MS: status is sampled during it.
      const second = await server.waitForRequest((r) => r.reply === "text" && r.replyText === "first answer", TURN_TIMEOUT_MS);
      const samples = await statusWhileInFlight(sandbox, agentId, second);
      expect(samples.filter((s) => s !== "streaming")).toEqual([]);

      lastTextAnswer = await server.waitForRequest(answeredText("first answer"), TURN_TIMEOUT_MS);
      const waiting = await sandbox.waitForAgent(agentId, "to read waiting after its answer", (a) => a.status === "waiting", WAITING_TIMEOUT_MS);
      expect(waiting.live).toBe(true);
      // Read off the CLI's hook or its screen, not the idle fallback (which says `idle`).
      expect(waiting.waitingReason).toBe("turn_end");
      const late = Date.now() - lastTextAnswer.finishedAt!;
      measured(agent, "first turn: answer finished to status waiting", late);
      expect(late, "the spawn prompt's turn read as over this long after the answer ended").toBeLessThanOrEqual(FIRST_TURN_WAITING_MAX_MS);
      sandbox.saveFixture(agentId, `${agent}-idle.bin`);
    }, STEP_TIMEOUT_MS);

    it("pu send starts a second turn", async () => {
      const before = server.requests.length;
      await sandbox.ok(["send", agentId, "SAY: second answer"]);
      const second = await server.waitForRequest((r) => r.seq > before && sawUserText("SAY: second answer")(r), TURN_TIMEOUT_MS);
      expect(second.reply).toBe("text");
      const answered = await server.waitForRequest((r) => r.seq >= second.seq && answeredText("second answer")(r), TURN_TIMEOUT_MS);
      const waiting = await sandbox.waitForAgent(agentId, "to read waiting after its second answer", (a) => a.status === "waiting", WAITING_TIMEOUT_MS);
      expect(waiting.waitingReason).toBe("turn_end");
      measured(agent, "second answer finished to status waiting", Date.now() - answered.finishedAt!);
    }, STEP_TIMEOUT_MS);

    // pu presses Enter once more when a hooked CLI's typed prompt did not start a turn within 5 s
    // (docs/readiness.md): safe only because an Enter on Claude's empty input box starts nothing.
    const emptyEnterTest = agent === "claude" ? it : it.skip;
    emptyEnterTest("an Enter on an empty input box starts no turn", async () => {
      const before = server.requests.length;
      await sandbox.ok(["send", agentId, "--keys", "Enter"]);
      // Nothing can report a turn that does not begin: give a real one more than its time to show.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(server.requests.slice(before).filter((r) => r.api !== "other")).toEqual([]);
      // Until its screen settles pu cannot tell it from a CLI slow to take a prompt; then it waits again.
      await sandbox.waitForAgent(agentId, "to read waiting again after the empty Enter", (a) => a.status === "waiting", WAITING_TIMEOUT_MS);
    }, STEP_TIMEOUT_MS);

    it("a trigger's steps are typed in turn: the next inject after the agent's turn ends", async () => {
      // A trigger file in the project types text into the agent: trusted like any such file.
      mkdirSync(path.join(sandbox.root, ".pu/triggers"), { recursive: true });
      writeFileSync(
        path.join(sandbox.root, ".pu/triggers/real-steps.yaml"),
        'name: real-steps\non: agent_idle\nsequence:\n  - inject: "SAY: trigger step one"\n  - inject: "SAY: trigger step two"\n',
      );
      await sandbox.ok(["trust"]);
      const before = server.requests.length;
      // The agent is waiting, so the first step is typed at once; the second once that turn has ended.
      await sandbox.ok(["trigger", "assign", agentId, "real-steps"]);
      const one = await server.waitForRequest((r) => r.seq > before && answeredText("trigger step one")(r), TURN_TIMEOUT_MS);
      const two = await server.waitForRequest((r) => r.seq > one.seq && sawUserText("SAY: trigger step two")(r), TURN_TIMEOUT_MS + WAITING_TIMEOUT_MS);
      measured(agent, "trigger step one answered to step two's request", two.receivedAt - one.finishedAt!);
      await sandbox.waitForAgent(agentId, "to finish its trigger", (a) => a.triggerState === "completed", TURN_TIMEOUT_MS + WAITING_TIMEOUT_MS);
    }, STEP_TIMEOUT_MS);

    // Only Claude resumes a conversation by id (`claude --resume <sessionId>`); Codex's
    // `resume --last` and OpenCode's `--continue` pick "the latest", not this agent's.
    const resumeTest = agent === "claude" ? it : it.skip;
    resumeTest("pu bench and pu play resume the conversation: the next turn carries the earlier ones", async () => {
      const oldPid = (await sandbox.agent(agentId)).pid;
      await sandbox.ok(["bench", agentId]);
      await sandbox.waitForAgent(agentId, "to be benched", (a) => a.suspended === true && a.status === "waiting");
      await sandbox.puJson(["play", agentId]);
      const resumed = await sandbox.waitForAgent(agentId, "to run again", (a) => a.suspended !== true && a.live && a.pid !== undefined && a.pid !== oldPid);
      // Typed only once the resumed TUI is idle (the raw log is no place to look for its input
      // box: Claude moves the cursor between words instead of writing spaces).
      await sandbox.waitForAgent(agentId, "to be waiting after the resume", (a) => a.status === "waiting", WAITING_TIMEOUT_MS);
      const before = server.requests.length;
      await sandbox.ok(["send", agentId, "SAY: after resume"]);
      const next = await server.waitForRequest((r) => r.seq > before && sawUserText("SAY: after resume")(r), TURN_TIMEOUT_MS);
      expect(next.userTurnTails.some((tail) => tail.includes(`made-by-${agent}`))).toBe(true);
      expect(resumed.pid).not.toBe(oldPid);
    }, STEP_TIMEOUT_MS);

    it("pu kill leaves no process of the agent behind", async () => {
      const agentPid = (await sandbox.agent(agentId)).pid;
      const processes: AgentProcess[] = processesOfAgent(agentId);
      expect(processes.map((p) => p.pid)).toContain(agentPid);
      console.log(`[real ${agent}] processes before kill:\n${processes.map((p) => `  ${p.pid} ${p.command.slice(0, 160)}`).join("\n")}`);
      await sandbox.ok(["kill", agentId]);
      const gone = await waitFor(
        `every process of ${agentId} to exit`,
        () => stillRunning(processes).length === 0 && processesOfAgent(agentId).length === 0,
        30_000,
        200,
      ).catch(() => false);
      const left = [...stillRunning(processes), ...processesOfAgent(agentId)].map((p) => `${p.pid} ${p.command}`);
      expect(gone ? [] : left).toEqual([]);
      expect((await sandbox.agent(agentId)).status).toBe("broken");
    }, STEP_TIMEOUT_MS);
  });
}
