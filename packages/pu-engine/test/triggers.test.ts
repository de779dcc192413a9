// Triggers bound to real agents (the scripted fake agent on a real PTY) in a real daemon.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import {
  cleanupAll,
  FAKE_AGENT_COMMAND,
  makeProject,
  manifestAgent,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  waitFor,
  trustProject,
} from "./helpers/daemon.js";

afterEach(cleanupAll);

function writeTrigger(root: string, name: string, yaml: string): string {
  const dir = path.join(root, ".pu", "triggers");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

async function logText(client: Client, agentId: string): Promise<string> {
  const logs = await client.request("logs", { agentId });
  return Buffer.from(logs.data).toString("utf8");
}

// Fails on its first two runs and passes on the third: it counts its own runs in .n.
const COUNTING_GATE = `n=$(cat .n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .n; echo "gate run $n"; [ $n -ge 3 ]`;

const THREE_STEPS = `on: agent_idle
sequence:
  - inject: "echo step one for {{WHO}}"
  - inject: "echo step two"
    gate:
      run: '${COUNTING_GATE}'
    max_retries: 3
  - inject: "echo step three"
variables:
  WHO: nobody
`;

describe("triggers", () => {
  it("runs a three-step sequence: a gate that fails twice gets fix requests, then passes, and the trigger completes", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeTrigger(repo.root, "three-step", THREE_STEPS);
    await trustProject(client, repo.root);

    const spawned = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: FAKE_AGENT_COMMAND,
      trigger: "three-step",
      vars: { WHO: "the tests" },
    });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    expect(spawned.agent).toMatchObject({ triggerName: "three-step", triggerSeqIndex: 0, triggerState: "active", triggerTotal: 3, gateAttempts: 0 });
    expect(manifestAgent(repo.root, id)).toMatchObject({ triggerName: "three-step", triggerVars: { WHO: "the tests" } });

    await waitFor("the trigger to complete", () => manifestAgent(repo.root, id)?.triggerState === "completed", 60_000);
    expect(manifestAgent(repo.root, id)).toMatchObject({ triggerSeqIndex: 3, triggerTotal: 3, gateAttempts: 0 });

    const text = await waitFor("step three's output", async () => {
      const t = await logText(client, id);
      return t.includes("\nstep three") ? t : undefined;
    });
    // The agent's vars override the trigger's variables.
    expect(text).toContain("step one for the tests");
    expect(text).toContain("fix request 1 of 3");
    expect(text).toContain("fix request 2 of 3");
    expect(text).not.toContain("fix request 3 of 3");
    expect(text).toContain("gate run 2");
    // Order: fix requests before step two, step two before step three.
    expect(text.indexOf("fix request 2 of 3")).toBeLessThan(text.indexOf("\nstep two"));
    expect(text.indexOf("\nstep two")).toBeLessThan(text.indexOf("\nstep three"));

    const { runs } = await client.request("trigger_log", { projectRoot: repo.root, agentId: id });
    expect(runs.map((r) => r.exitCode)).toEqual([1, 1, 0]);
    expect(runs.every((r) => r.triggerName === "three-step" && r.seqIndex === 1 && r.agentId === id)).toBe(true);
    expect(runs[2]?.outputTail).toContain("gate run 3");
    expect(existsSync(path.join(repo.root, ".pu", "gates", `${id}.jsonl`))).toBe(true);
  });

  it("a gate that never passes ends the trigger failed, with the reason on the agent", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeTrigger(
      repo.root,
      "never",
      `on: agent_idle
sequence:
  - gate: { run: "echo broken build; exit 4" }
    max_retries: 1
    inject: "echo unreachable"
`,
    );
    await trustProject(client, repo.root);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "never" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;

    await waitFor("the trigger to fail", () => manifestAgent(repo.root, id)?.triggerState === "failed", 60_000);
    const agent = manifestAgent(repo.root, id);
    expect(agent).toMatchObject({ triggerSeqIndex: 0, gateAttempts: 1 });
    expect(agent?.error).toContain("exited 4");
    const { runs } = await client.request("trigger_log", { projectRoot: repo.root, agentId: id });
    expect(runs.map((r) => r.exitCode)).toEqual([4, 4]);
    expect(runs[0]?.outputTail).toContain("broken build");
    const text = await logText(client, id);
    expect(text).toContain("fix request 1 of 1");
    expect(text).not.toContain("unreachable\r\n");
    // The agent itself keeps running: a failed trigger does not kill it.
    const status = await client.request("status", { projectRoot: repo.root, agentId: id });
    expect(status.agents[id]?.live).toBe(true);
  });

  it("a trigger file deleted while bound fails the binding cleanly", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const file = writeTrigger(
      repo.root,
      "gone",
      `on: agent_idle
sequence:
  - inject: "sleep 1500"
  - inject: "echo second"
`,
    );
    await trustProject(client, repo.root);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "gone" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await waitFor("the first action", () => manifestAgent(repo.root, id)?.triggerSeqIndex === 1, 30_000);
    rmSync(file);

    await waitFor("the binding to fail", () => manifestAgent(repo.root, id)?.triggerState === "failed", 30_000);
    expect(manifestAgent(repo.root, id)?.error).toBe("trigger gone no longer exists");
    expect(await logText(client, id)).not.toContain("echo second");
    const status = await client.request("status", { projectRoot: repo.root, agentId: id });
    expect(status.agents[id]?.live).toBe(true);
  });

  it("a missing trigger at spawn is NOT_FOUND naming where it looked, and leaves nothing behind", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const before = readManifest(repo.root);

    const attempt = client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "lonely", trigger: "nope" });
    await expect(attempt).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(attempt).rejects.toThrow(/nope.*\.pu\/triggers\/nope\.yaml.*triggers\/nope\.yaml/);
    const after = readManifest(repo.root);
    expect(after.worktrees).toEqual(before.worktrees);
    expect(after.agents).toEqual({});
    const worktreesDir = path.join(repo.root, ".pu", "worktrees");
    expect(existsSync(worktreesDir) ? readdirSync(worktreesDir) : []).toEqual([]);
    expect(repo.git(["branch", "--list", "pu/*"])).toBe("");
  });

  it("config defaultTrigger binds spawns without --trigger; --no-trigger is persisted and skips it", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, "defaultTrigger: hello\n");
    writeTrigger(repo.root, "hello", `on: agent_idle\nsequence:\n  - inject: "echo hello from the trigger"\n`);
    // Injects are typed into the agent: a hand-written trigger runs once trusted.
    await trustProject(client, repo.root);

    const bound = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(bound.agent.pid);
    const free = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, noTrigger: true });
    trackAgentPid(free.agent.pid);
    expect(bound.agent.triggerName).toBe("hello");
    expect(free.agent.triggerName).toBeUndefined();
    expect(manifestAgent(repo.root, free.agentId)?.noTrigger).toBe(true);

    await waitFor("the default trigger to complete", () => manifestAgent(repo.root, bound.agentId)?.triggerState === "completed", 30_000);
    await waitFor("the injected text", async () => (await logText(client, bound.agentId)).includes("\nhello from the trigger"));
    // The unbound agent has been waiting all along and was never typed into.
    await waitFor("the free agent to be waiting", async () => {
      const status = await client.request("status", { projectRoot: repo.root, agentId: free.agentId });
      return status.agents[free.agentId]?.status === "waiting";
    });
    expect(await logText(client, free.agentId)).not.toContain("hello from the trigger");
  });

  it("assign_trigger binds an agent that is already waiting and runs at once", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeTrigger(repo.root, "later", `on: agent_idle\nsequence:\n  - inject: "echo assigned {{WHAT}}"\n`);
    // Injects are typed into the agent: a hand-written trigger runs once trusted.
    await trustProject(client, repo.root);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await waitFor("the agent to wait", async () => {
      const status = await client.request("status", { projectRoot: repo.root, agentId: id });
      return status.agents[id]?.status === "waiting";
    });

    const assigned = await client.request("assign_trigger", { projectRoot: repo.root, agentId: id, trigger: "later", vars: { WHAT: "later" } });
    expect(assigned).toEqual({ agentId: id, triggerName: "later", triggerTotal: 1, triggerState: "active" });
    await waitFor("the assigned trigger to complete", () => manifestAgent(repo.root, id)?.triggerState === "completed", 30_000);
    await waitFor("the injected text", async () => (await logText(client, id)).includes("\nassigned later"));

    await expect(client.request("assign_trigger", { projectRoot: repo.root, agentId: id, trigger: "missing" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await expect(client.request("assign_trigger", { projectRoot: repo.root, agentId: "ag-nothere", trigger: "later" })).rejects.toMatchObject({
      code: "AGENT_NOT_FOUND",
    });

    // An agent that has ended never waits again: binding it would leave an "active" trigger on it for good.
    const ended = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(ended.agent.pid);
    await client.request("kill", { projectRoot: repo.root, target: ended.agentId });
    await expect(client.request("assign_trigger", { projectRoot: repo.root, agentId: ended.agentId, trigger: "later" })).rejects.toMatchObject({
      code: "INVALID_STATE",
      message: expect.stringContaining(`${ended.agentId} is not running (it exited`),
    });
    expect(manifestAgent(repo.root, ended.agentId)?.triggerState).toBeUndefined();
  });

  it("after a daemon restart a bound agent continues with its next action once it waits again", async () => {
    const first = await startTestDaemon();
    const firstClient = await first.client();
    const repo = await makeProject(firstClient);
    writeTrigger(repo.root, "two", `on: agent_idle\nsequence:\n  - inject: "sleep 5000"\n  - inject: "echo after the restart"\n`);
    // Injects are typed into the agent: a hand-written trigger runs once trusted.
    await trustProject(firstClient, repo.root);
    const spawned = await firstClient.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "two" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await waitFor("the first action", () => manifestAgent(repo.root, id)?.triggerSeqIndex === 1, 30_000);
    await first.stop();
    expect(manifestAgent(repo.root, id)).toMatchObject({ suspended: true, triggerState: "active", triggerSeqIndex: 1 });

    const second = await startTestDaemon(first.home);
    const client = await second.client();
    const resumed = await client.request("resume", { projectRoot: repo.root, agentId: id });
    trackAgentPid(resumed.agent.pid);
    await waitFor("the trigger to complete", () => manifestAgent(repo.root, id)?.triggerState === "completed", 30_000);
    await waitFor("the second action's output", async () => (await logText(client, id)).includes("\nafter the restart"));
  });

  it("an agent that becomes waiting again while its gate runs does not start a second run; one that exits mid-gate stops it", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeTrigger(
      repo.root,
      "slow-gate",
      `on: agent_idle\nsequence:\n  - gate: { run: "sleep 2; echo gate done" }\n    inject: "echo after the gate"\n`,
    );
    await trustProject(client, repo.root);
    const busy = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "slow-gate" });
    trackAgentPid(busy.agent.pid);
    await waitFor("the gate to start", () => manifestAgent(repo.root, busy.agentId)?.triggerState === "gating", 30_000);
    // streaming, then waiting again, while the gate still runs
    await client.request("input", { agentId: busy.agentId, data: Buffer.from("sleep 300\r") });
    await waitFor("the trigger to complete", () => manifestAgent(repo.root, busy.agentId)?.triggerState === "completed", 30_000);
    const { runs } = await client.request("trigger_log", { projectRoot: repo.root, agentId: busy.agentId });
    expect(runs).toHaveLength(1);
    expect(runs[0]?.outputTail).toContain("gate done");

    const quitter = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "slow-gate" });
    trackAgentPid(quitter.agent.pid);
    await waitFor("the gate to start", () => manifestAgent(repo.root, quitter.agentId)?.triggerState === "gating", 30_000);
    await client.request("input", { agentId: quitter.agentId, data: Buffer.from("exit 0\r") });
    await waitFor("the exit to be recorded", () => manifestAgent(repo.root, quitter.agentId)?.status === "broken", 30_000);
    expect(manifestAgent(repo.root, quitter.agentId)).toMatchObject({ triggerState: "gating", triggerSeqIndex: 0 });
    expect((await client.request("trigger_log", { projectRoot: repo.root, agentId: quitter.agentId })).runs).toEqual([]);
  });
  it("trigger variables reach a gate as environment variables, never as shell text", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeTrigger(
      repo.root,
      "vars",
      `on: agent_idle
sequence:
  - gate: { run: "printf '%s' {{SUITE}} > bare.txt; printf '%s' \\"[{{SUITE}}]\\" > double.txt; printf '%s' '[{{SUITE}}]' > single.txt; printf '%s' \\"$PU_VAR_SUITE\\" > env.txt" }
    inject: "echo gate done"
`,
    );
    await trustProject(client, repo.root);
    const hostile = `x; touch pwned-semi # $(touch pwned-sub) \`touch pwned-tick\` 'q' "q"`;
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, trigger: "vars", vars: { SUITE: hostile } });
    trackAgentPid(spawned.agent.pid);
    await waitFor("the trigger to complete", () => manifestAgent(repo.root, spawned.agentId)?.triggerState === "completed", 60_000);
    const read = (name: string) => readFileSync(path.join(repo.root, name), "utf8");
    expect(read("bare.txt")).toBe(hostile);
    expect(read("double.txt")).toBe(`[${hostile}]`);
    expect(read("single.txt")).toBe(`[${hostile}]`);
    expect(read("env.txt")).toBe(hostile);
    expect(readdirSync(repo.root).filter((f) => f.startsWith("pwned"))).toEqual([]);
  });
});
