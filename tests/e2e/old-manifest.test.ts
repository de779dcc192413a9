// A manifest written by an older pu (or by hand) with the old status names is read and
// reported with the new ones: spawning/running → streaming, idle/suspended → waiting,
// completed/failed/killed/lost → broken.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentEntrySchema } from "@pu/core/manifest";
import { allAgents, FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";

const OLD_TO_NEW: Record<string, string> = {
  spawning: "streaming",
  running: "streaming",
  idle: "waiting",
  suspended: "waiting",
  completed: "broken",
  failed: "broken",
  killed: "broken",
  lost: "broken",
};

describe("old manifest status values end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-old-manifest-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("status --json shows a hand-written manifest's old status values as the new ones", async () => {
    const stamp = "2026-03-08T12:00:00Z";
    const agent = (n: number, status: string, extra: Record<string, unknown> = {}) => ({
      id: `ag-old0000${n}`,
      name: `old ${status}`,
      agentType: "terminal",
      status,
      startedAt: stamp,
      ...extra,
    });
    const oldNames = Object.keys(OLD_TO_NEW);
    // Root agents for the first half, a worktree's agents for the rest.
    const rootAgents = Object.fromEntries(oldNames.slice(0, 4).map((s, i) => [`ag-old0000${i}`, agent(i, s)]));
    const wtAgents = Object.fromEntries(
      oldNames.slice(4).map((s, i) => [`ag-old0000${i + 4}`, agent(i + 4, s, { completedAt: stamp, exitCode: 1 })]),
    );
    const manifest = {
      version: 1,
      projectRoot: sb.root,
      worktrees: {
        "wt-old00000": {
          id: "wt-old00000",
          name: "legacy",
          path: path.join(sb.root, ".pu", "worktrees", "wt-old00000"),
          branch: "pu/legacy",
          baseBranch: "main",
          status: "active",
          agents: wtAgents,
          createdAt: stamp,
        },
      },
      agents: rootAgents,
      createdAt: stamp,
      updatedAt: stamp,
    };
    mkdirSync(path.join(sb.root, ".pu"));
    const file = path.join(sb.root, ".pu", "manifest.json");
    writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");

    const report = await sb.status();
    const agents = allAgents(report);
    expect(agents).toHaveLength(oldNames.length);
    for (const a of agents) {
      const old = /^old (\w+)$/.exec(a.name)![1]!;
      expect(a.status, `agent stored as "${old}"`).toBe(OLD_TO_NEW[old]);
      expect(a.storedStatus, `agent stored as "${old}"`).toBe(OLD_TO_NEW[old]);
      expect(a.live).toBe(false);
      expect(AgentEntrySchema.safeParse(a).success).toBe(true);
    }
    expect(report.worktrees["wt-old00000"]!.agents["ag-old00007"]).toMatchObject({ status: "broken", exitCode: 1 });

    // The next write by the daemon stores only new values; nothing it does not know is lost.
    await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND]);
    const rewritten = readFileSync(file, "utf8");
    for (const old of oldNames) expect(rewritten, `"${old}" left in the manifest`).not.toContain(`"status": "${old}"`);
    const reread = await sb.status();
    for (const a of allAgents(reread).filter((x) => x.name.startsWith("old "))) {
      expect(a.status).toBe(OLD_TO_NEW[/^old (\w+)$/.exec(a.name)![1]!]);
    }
  });
});
