// run_swarm against a real daemon: real worktrees, real PTYs.
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, readManifest, startTestDaemon, trackAgentPid, trustProject, waitFor } from "./helpers/daemon.js";

afterEach(cleanupAll);

function writeDef(root: string, dir: string, file: string, text: string): void {
  mkdirSync(path.join(root, ".pu", dir), { recursive: true });
  writeFileSync(path.join(root, ".pu", dir, file), text);
}

async function logText(client: Client, agentId: string): Promise<string> {
  return Buffer.from((await client.request("logs", { agentId })).data).toString("utf8");
}

describe("swarms", () => {
  it("creates worktreeCount worktrees, each with the roster (by role) and a terminal; failures are reported, the rest kept", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    writeDef(
      repo.root,
      "agents",
      "worker.yaml",
      `agentType: terminal\ncommand: ${JSON.stringify(FAKE_AGENT_COMMAND)}\ninlinePrompt: "echo working on {{TASK}}"\n`,
    );
    await trustProject(client, repo.root);
    writeDef(
      repo.root,
      "swarms",
      "squad.yaml",
      `worktreeCount: 2
worktreeTemplate: "{name}-{index}"
roster:
  - { agentDef: worker, role: builder, quantity: 2 }
  - { agentDef: no-such-agent, role: ghost }
includeTerminal: true
`,
    );

    const result = await client.request("run_swarm", { projectRoot: repo.root, name: "squad", vars: { TASK: "the parser" } });
    const m = readManifest(repo.root);
    for (const wt of Object.values(m.worktrees)) for (const agent of Object.values(wt.agents)) trackAgentPid(agent.pid);

    expect(result.spawned).toHaveLength(6);
    expect(result.failed).toHaveLength(2);
    expect(result.failed.every((f) => f.role === "ghost" && f.agentDef === "no-such-agent" && f.code === "NOT_FOUND")).toBe(true);

    const worktrees = Object.values(m.worktrees).sort((a, b) => a.name.localeCompare(b.name));
    expect(worktrees.map((w) => w.name)).toEqual(["squad-1", "squad-2"]);
    expect(worktrees.map((w) => w.branch)).toEqual(["pu/squad-1", "pu/squad-2"]);
    for (const wt of worktrees) {
      const agents = Object.values(wt.agents);
      expect(agents.map((a) => a.name).sort()).toEqual(["builder", "builder", "terminal"]);
      expect(result.spawned.filter((s) => s.worktreeId === wt.id)).toHaveLength(3);
    }
    // Each builder got its definition's prompt, rendered with the swarm's vars.
    const builder = result.spawned.find((s) => s.role === "builder");
    expect(builder?.agentDef).toBe("worker");
    await waitFor("the builder's prompt to be typed", async () => (await logText(client, builder?.agentId ?? "")).includes("\nworking on the parser"));
    expect(repo.git(["worktree", "list"]).split("\n")).toHaveLength(3);
  });

  it("an unknown swarm is NOT_FOUND and creates nothing", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    await expect(client.request("run_swarm", { projectRoot: repo.root, name: "nobody" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(readManifest(repo.root).worktrees).toEqual({});
  });
});
