// Worktree work through the real `pu` binary: an agent commits in its worktree, then
// diff --stat, a clean merge, a conflicting merge, clean --worktree and clean --all.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";

describe("pu worktrees end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let feature: { agentId: string; worktreeId: string; worktreePath: string };
  let conflicting: { agentId: string; worktreeId: string; worktreePath: string };

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-worktrees-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  /** Spawns the fake agent in a new worktree and has it write and commit one file. */
  async function agentCommits(name: string, file: string, text: string) {
    const spawned = await sb.spawnAgent(["--command", FAKE_AGENT_COMMAND, "--name", name]);
    await sb.waitForLogs(spawned.agentId, "fake-agent ready");
    await sb.ok(["send", spawned.agentId, `write ${file} ${text}`]);
    await sb.waitForLogs(spawned.agentId, `wrote ${file}`);
    await sb.ok(["send", spawned.agentId, `commit ${name} work`]);
    await sb.waitForLogs(spawned.agentId, /\ncommitted\r?\n/);
    return { agentId: spawned.agentId, worktreeId: spawned.worktreeId!, worktreePath: spawned.worktreePath! };
  }

  it("diff --stat lists what an agent committed in its worktree", async () => {
    expect((await sb.puJson<{ created: boolean }>(["init"])).created).toBe(true);
    feature = await agentCommits("feature", "feature.txt", "from the agent");
    const diff = await sb.ok(["diff", "--stat"]);
    expect(diff).toContain(`${feature.worktreeId} feature (pu/feature vs main): 1 file(s), +1 -0`);
    expect(diff).toMatch(/\n {2}feature\.txt +\+1 -0\n/);
  });

  it("merge of a clean worktree lands its commit on main", async () => {
    const out = await sb.ok(["merge", feature.worktreeId]);
    expect(out).toMatch(new RegExp(`^merged ${feature.worktreeId} into main`));
    expect(sb.git(["show", "main:feature.txt"])).toBe("from the agent");
    const report = await sb.status();
    expect(report.worktrees[feature.worktreeId]!.status).toBe("merged");
  });

  it("merge of a conflicting worktree exits 1 naming the file and leaves main untouched", async () => {
    conflicting = await agentCommits("clash", "README.md", "agent side");
    sb.commitFiles({ "README.md": "main side\n" }, "main changes README");
    const mainBefore = sb.git(["rev-parse", "main"]);

    const merge = await sb.pu(["merge", conflicting.worktreeId]);
    expect(merge.code).toBe(1);
    expect(merge.stderr).toContain("README.md");
    expect(merge.stderr.trim().split("\n")).toHaveLength(1);

    expect(sb.git(["rev-parse", "main"])).toBe(mainBefore);
    expect(sb.git(["status", "--porcelain", "--untracked-files=no"])).toBe("");
    expect(readFileSync(path.join(sb.root, "README.md"), "utf8")).toBe("main side\n");
    expect(existsSync(path.join(sb.root, ".git", "MERGE_HEAD"))).toBe(false);
    const report = await sb.status();
    expect(report.worktrees[conflicting.worktreeId]!.status).toBe("failed");

    // --json carries every conflicting file as structured details.
    const again = await sb.pu(["merge", conflicting.worktreeId, "--json"]);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toEqual({
      error: { code: "MERGE_CONFLICT", message: expect.stringContaining("README.md"), details: { conflicts: ["README.md"] } },
    });
  });

  it("merging a worktree with no commits says there is nothing to merge and leaves it active", async () => {
    const empty = await sb.spawnAgent(["--agent", "terminal", "--name", "empty"]);
    const out = await sb.ok(["merge", empty.worktreeId!]);
    expect(out).toContain(`nothing to merge: ${empty.worktreeId}'s branch has no commit main lacks`);
    expect((await sb.status()).worktrees[empty.worktreeId!]!.status).toBe("active");
    await sb.ok(["clean", "--worktree", empty.worktreeId!]);
  });

  it("clean --worktree removes that worktree's directory and branch only", async () => {
    // feature was merged above, so nothing of it is lost.
    await sb.ok(["clean", "--worktree", feature.worktreeId]);
    expect(existsSync(feature.worktreePath)).toBe(false);
    expect(sb.git(["branch", "--list", "pu/feature"])).toBe("");
    expect(existsSync(conflicting.worktreePath)).toBe(true);
    expect(sb.git(["branch", "--list", "pu/clash"])).toContain("pu/clash");
  });

  it("clean refuses a worktree with unmerged commits or uncommitted files unless --force, and says what it discarded", async () => {
    const risky = await sb.spawnAgent(["--agent", "terminal", "--name", "risky"]);
    writeFileSync(path.join(risky.worktreePath!, "draft.txt"), "half done\n");
    const refused = await sb.pu(["clean", "--worktree", risky.worktreeId!]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("1 uncommitted file (draft.txt)");
    expect(refused.stderr).toContain("--force");
    expect(existsSync(path.join(risky.worktreePath!, "draft.txt"))).toBe(true);
    expect((await sb.agent(risky.agentId)).live).toBe(true);

    // --all keeps it (and the conflicting worktree, whose commit never merged) and lists why.
    const kept = await sb.pu(["clean", "--all", "--json"]);
    expect(kept.code).toBe(0);
    const report = JSON.parse(kept.stdout) as { cleaned: unknown[]; kept: { worktreeId: string; uncommittedFiles: string[]; unmergedCommits: number }[] };
    expect(report.cleaned).toEqual([]);
    expect(report.kept).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ worktreeId: risky.worktreeId, uncommittedFiles: ["draft.txt"], unmergedCommits: 0 }),
        expect.objectContaining({ worktreeId: conflicting.worktreeId, uncommittedFiles: [], unmergedCommits: 1 }),
      ]),
    );
    expect(existsSync(conflicting.worktreePath)).toBe(true);

    const forced = await sb.ok(["clean", "--worktree", risky.worktreeId!, "--force"]);
    expect(forced).toContain("discarded 1 uncommitted file (draft.txt)");
    expect(existsSync(risky.worktreePath!)).toBe(false);
  });

  it("clean --all --force removes every worktree directory and every pu/* branch", async () => {
    const third = await sb.spawnAgent(["--agent", "terminal", "--name", "third"]);
    const out = await sb.ok(["clean", "--all", "--force"]);
    expect(out).toContain(`cleaned ${third.worktreeId}`);
    for (const dir of [conflicting.worktreePath, third.worktreePath!]) expect(existsSync(dir), dir).toBe(false);
    expect(sb.git(["branch", "--list", "pu/*"])).toBe("");
    expect(sb.git(["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
    const agent = await sb.agent(third.agentId).catch(() => undefined);
    if (agent) expect(agent.live).toBe(false);
  });
});
