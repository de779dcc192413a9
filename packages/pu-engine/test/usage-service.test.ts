// UsageService in-process, over Claude Code session files the test writes itself: what it
// reads as the file grows, what it keeps in .pu/usage.json, how a daemon that died mid-read is
// settled by the next one, and that a corrupt usage.json is reported and never overwritten.
// (The real CLIs against the model server: tests/e2e/real-usage.test.ts.)
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newManifest } from "@pu/core/manifest";
import { manifestPath } from "@pu/core/paths";
import { claudeProjectFolder } from "@pu/core/usage";
import { usageFilePath } from "@pu/core/usage-file";
import type { EngineEventMap } from "../src/engine-events.js";
import { openDaemonLog } from "../src/daemon-log.js";
import { ProjectRegistry } from "../src/projects.js";
import { EngineState } from "../src/state.js";
import { UsageService } from "../src/usage/usage-service.js";

const SESSION = "0b7c2a1e-3f4d-4e5f-8a9b-0c1d2e3f4a5b";

function answerLine(id: string, output: number, model = "claude-sonnet-4-5"): string {
  const usage = { input_tokens: 100, cache_read_input_tokens: 300, cache_creation_input_tokens: 40, output_tokens: output };
  return `${JSON.stringify({ type: "assistant", timestamp: new Date().toISOString(), message: { id, model, usage } })}\n`;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("UsageService", () => {
  let base: string;
  let root: string;
  let home: string;
  let recordFile: string;
  let state: EngineState;
  const services: UsageService[] = [];

  const newService = () => {
    const service = new UsageService(state, openDaemonLog(path.join(base, "daemon.log")), 20);
    service.start();
    services.push(service);
    return service;
  };

  /** What the launcher announces when it starts a Claude agent with its session id. */
  const started = (agentId: string) =>
    state.events.emit("agent_started", {
      projectRoot: root,
      agentId,
      agentType: "claude",
      pid: 1,
      resumed: false,
      live: { cwd: root, startedAtMs: Date.now() } as EngineEventMap["agent_started"]["live"],
      entry: { id: agentId, name: "usage-test", agentType: "claude", status: "streaming", startedAt: new Date().toISOString(), sessionId: SESSION, env: { HOME: home } },
    });

  beforeEach(() => {
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-usage-service-")));
    root = path.join(base, "project");
    home = path.join(base, "agent-home");
    mkdirSync(path.join(root, ".pu"), { recursive: true });
    writeFileSync(manifestPath(root), JSON.stringify(newManifest(root)));
    recordFile = path.join(home, ".claude", "projects", claudeProjectFolder(root), `${SESSION}.jsonl`);
    mkdirSync(path.dirname(recordFile), { recursive: true });
    state = new EngineState(path.join(base, "home"), new ProjectRegistry(path.join(base, "projects.json")), openDaemonLog(path.join(base, "daemon.log")));
  });

  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop();
    rmSync(base, { recursive: true, force: true });
  });

  it("follows the session file as it grows, counts each answer once, and keeps the figures in usage.json", async () => {
    const service = newService();
    started("ag-usage001");
    appendFileSync(recordFile, answerLine("msg_1", 1));
    // The answer's second block: the same id, the final output figure; a torn line after it.
    appendFileSync(recordFile, answerLine("msg_1", 20) + answerLine("msg_2", 20).slice(0, 30));
    const usage = await until("two lines of one answer read", async () => {
      const u = (await service.usage(root, "agent")).total;
      return u.calls === 1 && u.output === 20 ? u : undefined;
    });
    expect(usage).toMatchObject({ input: 100, cacheRead: 300, cacheWrite: 40, output: 20 });
    // Sonnet 4.5 list prices: $3 in, $0.30 cache read, $3.75 cache write, $15 out per million.
    expect(usage.costUsd).toBeCloseTo((100 * 3 + 300 * 0.3 + 40 * 3.75 + 20 * 15) / 1e6, 12);
    // The torn line completes.
    appendFileSync(recordFile, answerLine("msg_2", 20).slice(30));
    await until("the completed line read", async () => ((await service.usage(root, "agent")).total.calls === 2 ? true : undefined));
    await until("usage.json written", () => {
      try {
        const file = JSON.parse(readFileSync(usageFilePath(root), "utf8"));
        return file.agents["ag-usage001"]?.sources[`claude:${recordFile}`] ? file : undefined;
      } catch {
        return undefined;
      }
    });
  });

  it("names a started agent and its record in usage.json at once, before any batched write, so a SIGKILLed daemon's successor reads it again", async () => {
    newService();
    started("ag-usage004");
    // The batch writes every 5 s; this is well before the first.
    const file = await until("the entry and its source written", () => {
      try {
        const written = JSON.parse(readFileSync(usageFilePath(root), "utf8"));
        return written.agents["ag-usage004"]?.sources[`claude:${recordFile}`] ? written : undefined;
      } catch {
        return undefined;
      }
    }, 2_000);
    expect(file.agents["ag-usage004"]).toMatchObject({ reading: true, sources: { [`claude:${recordFile}`]: {} } });
    // A source with nothing in it yet says nothing: the agent's usage is unknown, not 0.
    const view = (await services[0]!.figuresOf(root, ["ag-usage004"])).get("ag-usage004");
    expect(view).toBeNull();
  });

  it("a group's budget counts its members on hosts as their hosts report them: under it with this machine's alone, over it with both", async () => {
    const service = newService();
    const group = { kind: "group" as const, id: "g-spread" };
    // This machine's member: 440 tokens (100 in, 300 cache read, 40 cache write) + 20 out = 460.
    service.limitOwner(root, group, "ag-usage005", { maxTokens: 1000 });
    started("ag-usage005");
    appendFileSync(recordFile, answerLine("msg_1", 20));
    await until("the local member's call read", async () => ((await service.ownerFigures(root, group))?.calls === 1 ? true : undefined));
    expect(await service.ownerOver(root, group, { maxTokens: 1000 })).toBeUndefined();
    // Its member on a host reported 600 tokens: 1,060 together, past the group's 1,000.
    const asked: string[] = [];
    service.setElsewhere(async (askedRoot, owner) => {
      asked.push(`${owner.kind}:${owner.id}`);
      return askedRoot === root && owner.id === "g-spread" ? [{ input: 500, output: 100, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 2, costUsd: 0.01 }] : [];
    });
    expect(await service.ownerFigures(root, group)).toMatchObject({ input: 600, output: 120, calls: 3 });
    expect(await service.ownerOver(root, group, { maxTokens: 1000 })).toMatch(/^max 1000 tokens, spent 1060 tokens/);
    expect(asked).toContain("group:g-spread");
    // A host's figures without a price make the total's cost unknown, not a smaller number.
    service.setElsewhere(async () => [{ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: null }]);
    expect((await service.ownerFigures(root, group))?.costUsd).toBeNull();
  });

  it("a budget lowered to what the agent already spent stops it at once; raised past it, the agent may go on", async () => {
    const service = newService();
    started("ag-usage005");
    appendFileSync(recordFile, answerLine("msg_1", 60));
    await until("the answer read", async () => ((await service.usage(root, "agent")).total.calls === 1 ? true : undefined));
    const known = { name: "usage-test", agentType: "claude", startedAt: new Date().toISOString() };
    // 100 in, 300 cache read, 40 cache write, 60 out: well under 10,000.
    expect((await service.setBudget(root, "ag-usage005", { maxTokens: 10_000 }, known)).budget?.exceededAt).toBeUndefined();
    const lowered = await service.setBudget(root, "ag-usage005", { maxTokens: 100 }, known);
    expect(lowered.budget).toMatchObject({ maxTokens: 100, exceededAt: expect.any(String) });
    expect(readFileSync(path.join(base, "daemon.log"), "utf8")).toMatch(/"budget_exceeded".*"ag-usage005"/);
    expect((await service.setBudget(root, "ag-usage005", { maxTokens: 10_000 }, known)).budget?.exceededAt).toBeUndefined();
  });

  it("records read to the end on request (a turn that just ended, a control plane asking) are still judged against the budget at the next poll", async () => {
    // A poll every 300 ms: the read on request below comes between two polls.
    const service = new UsageService(state, openDaemonLog(path.join(base, "daemon.log")), 300);
    service.start();
    services.push(service);
    started("ag-usage006");
    appendFileSync(recordFile, answerLine("msg_1", 1));
    await until("the first answer read", async () => ((await service.usage(root, "agent")).total.calls === 1 ? true : undefined));
    const known = { name: "usage-test", agentType: "claude", startedAt: new Date().toISOString() };
    // 441 tokens so far, under 1,000; the next answer (1,040) crosses it.
    expect((await service.setBudget(root, "ag-usage006", { maxTokens: 1000 }, known)).budget?.exceededAt).toBeUndefined();
    appendFileSync(recordFile, answerLine("msg_2", 600));
    expect(await service.finalFigures(root, "ag-usage006")).toMatchObject({ calls: 2 });
    // Before, the poll found nothing new after this read, and the crossed budget was never enforced.
    expect(await until("the budget enforced", () => service.overBudget("ag-usage006"), 3_000)).toBe("max 1000 tokens");
  });

  it("a model without a price makes the cost unknown, not 0", async () => {
    const service = newService();
    started("ag-usage002");
    appendFileSync(recordFile, answerLine("msg_1", 20, "no-such-model-anywhere"));
    const total = await until("the call read", async () => {
      const t = (await service.usage(root, "model")).total;
      return t.calls === 1 ? t : undefined;
    });
    expect(total.costUsd).toBeNull();
  });

  it("settles an agent a dead daemon was still reading: its record is read again, nothing counted twice", async () => {
    appendFileSync(recordFile, answerLine("msg_1", 20) + answerLine("msg_1", 20) + answerLine("msg_2", 20));
    // As a daemon killed mid-read leaves it: one answer counted, still reading.
    const tally = { [`${new Date().toISOString().slice(0, 10)}|claude-sonnet-4-5`]: { input: 100, cacheRead: 300, cacheWrite: 40, output: 20, reasoning: 0, calls: 1 } };
    const stored = { version: 1, agents: { "ag-usage003": { name: "n", agentType: "claude", startedAt: new Date().toISOString(), sources: { [`claude:${recordFile}`]: tally }, reading: true } } };
    writeFileSync(usageFilePath(root), JSON.stringify(stored));
    const service = newService();
    const total = await until("the record settled", async () => {
      const t = (await service.usage(root, "agent")).total;
      return t.calls === 2 ? t : undefined;
    });
    expect(total).toMatchObject({ input: 200, output: 40, calls: 2 });
    await service.stop();
    const file = JSON.parse(readFileSync(usageFilePath(root), "utf8"));
    expect(file.agents["ag-usage003"].reading).toBeUndefined();
  });

  it("a usage.json spoiled while the daemon runs is not written over: it is reported from then on", async () => {
    const service = newService();
    started("ag-usage005");
    appendFileSync(recordFile, answerLine("msg_1", 20));
    await until("usage.json written", () => {
      try {
        return JSON.parse(readFileSync(usageFilePath(root), "utf8")).agents["ag-usage005"] ? true : undefined;
      } catch {
        return undefined;
      }
    });
    writeFileSync(usageFilePath(root), "{ spoiled");
    // A new answer is counted in memory; the write that would carry it finds the file changed.
    appendFileSync(recordFile, answerLine("msg_2", 20));
    await until("the spoiled file reported", async () => service.usage(root, "agent").then(() => undefined, (error: Error) => (/usage\.json: not valid JSON/.test(error.message) ? true : undefined)));
    await service.stop();
    expect(readFileSync(usageFilePath(root), "utf8")).toBe("{ spoiled");
  });

  it("reports a corrupt usage.json in one line and never overwrites it", async () => {
    writeFileSync(usageFilePath(root), "{ not json");
    const service = newService();
    await expect(service.usage(root, "agent")).rejects.toThrow(/usage\.json: not valid JSON/);
    started("ag-usage004");
    appendFileSync(recordFile, answerLine("msg_1", 20));
    await expect(service.setBudget(root, "ag-usage004", { maxCost: 1 }, { name: "n", agentType: "claude", startedAt: new Date().toISOString() })).rejects.toThrow(/does not overwrite it/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await service.stop();
    expect(readFileSync(usageFilePath(root), "utf8")).toBe("{ not json");
  });
});
