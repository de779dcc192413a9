import * as path from "node:path";
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import {
  cleanupAll,
  FAKE_AGENT_COMMAND,
  isProcessAlive,
  makeProject,
  manifestAgent,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  waitFor,
} from "./helpers/daemon.js";

afterEach(cleanupAll);

const enter = (text: string) => Buffer.from(`${text}\r`);

describe("worktrees through the daemon", () => {
  it("spawns into several new worktrees at once, each with pu's git hooks installed", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => client.request("spawn", { projectRoot: repo.root, name: `parallel-${i}`, command: "sleep 60" })),
    );
    for (const r of results) if (r.status === "fulfilled") trackAgentPid(r.value.agent.pid);
    const failures = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
    expect(failures).toEqual([]);
    for (const r of results) {
      if (r.status !== "fulfilled") continue;
      const hooksPath = repo.git(["config", "--worktree", "--get", "core.hooksPath"], r.value.worktreePath);
      expect(existsSync(path.join(hooksPath, "pre-commit"))).toBe(true);
    }
  });

  it("merges and cleans several worktrees at once: every merge lands on main and every worktree goes", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = [];
    for (let i = 0; i < 5; i++) {
      const s = await client.request("spawn", { projectRoot: repo.root, name: `batch-${i}`, command: "sleep 60" });
      trackAgentPid(s.agent.pid);
      repo.commit({ [`file-${i}.txt`]: `work ${i}\n` }, `work ${i}`, s.worktreePath);
      spawned.push(s);
    }
    const merges = await Promise.allSettled(
      spawned.map((s) => client.request("merge", { projectRoot: repo.root, worktreeId: s.worktreeId ?? "" })),
    );
    expect(merges.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))).toEqual([]);
    for (let i = 0; i < spawned.length; i++) expect(repo.git(["show", `main:file-${i}.txt`])).toBe(`work ${i}`);
    expect(repo.git(["status", "--porcelain"])).toBe("");

    const cleans = await Promise.allSettled(
      spawned.map((s) => client.request("clean", { projectRoot: repo.root, worktreeId: s.worktreeId ?? "" })),
    );
    expect(cleans.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))).toEqual([]);
    for (const s of spawned) expect(existsSync(s.worktreePath ?? "")).toBe(false);
    expect(repo.git(["branch", "--list", "pu/*"])).toBe("");
    expect(repo.git(["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
  });

  it("eight parallel spawns with one --name all succeed, as same, same-2 … same-8, as sequential ones would", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => client.request("spawn", { projectRoot: repo.root, name: "same", command: "sleep 60" })),
    );
    expect(results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))).toEqual([]);
    const spawned = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    for (const s of spawned) trackAgentPid(s.agent.pid);
    const names = Object.values(readManifest(repo.root).worktrees).map((w) => w.name).sort();
    expect(names).toEqual(["same", ...Array.from({ length: 7 }, (_, i) => `same-${i + 2}`)].sort());
    expect(new Set(spawned.map((s) => s.branch)).size).toBe(8);
  });

  it("spawn creates a named worktree, diff shows the agent's work, merge brings it home, clean removes it", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, prompt: "Fix the Login bug now please!" });
    trackAgentPid(spawned.agent.pid);
    const wtId = spawned.worktreeId ?? "";
    expect(spawned.branch).toBe("pu/fix-the-login-bug-now");
    expect(spawned.agent.name).toBe("Terminal");
    expect(repo.git(["branch", "--list", "pu/*"])).toContain("pu/fix-the-login-bug-now");
    const wt = readManifest(repo.root).worktrees[wtId];
    expect(wt).toMatchObject({ name: "fix-the-login-bug-now", status: "active", baseBranch: "main", path: spawned.worktreePath });
    expect(wt?.agents[spawned.agentId]).toBeDefined();

    // The same name again gets a suffix.
    const second = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "fix the login bug now" });
    trackAgentPid(second.agent.pid);
    expect(second.branch).toBe("pu/fix-the-login-bug-now-2");

    // The typed prompt reaches the fake agent; then it writes and commits a file.
    await waitFor("the prompt to be typed", async () =>
      Buffer.from((await client.request("logs", { agentId: spawned.agentId })).data).toString().includes("unknown: Fix the Login bug now please!"),
    );
    await client.request("input", { agentId: spawned.agentId, data: enter("write feature.txt from the agent") });
    await client.request("input", { agentId: spawned.agentId, data: enter("commit add feature") });
    await waitFor("the commit", async () =>
      Buffer.from((await client.request("logs", { agentId: spawned.agentId })).data).toString().includes("committed"),
    );

    const diff = await client.request("diff", { projectRoot: repo.root, worktreeId: wtId });
    expect(diff.worktrees).toHaveLength(1);
    expect(diff.worktrees[0]).toMatchObject({ worktreeId: wtId, files: [{ path: "feature.txt", insertions: 1, deletions: 0 }] });
    expect(diff.worktrees[0]?.patch).toContain("+from the agent");
    const all = await client.request("diff", { projectRoot: repo.root, stat: true });
    expect(all.worktrees.map((w) => w.worktreeId).sort()).toEqual([wtId, second.worktreeId].sort());

    const merged = await client.request("merge", { projectRoot: repo.root, worktreeId: wtId });
    expect(merged).toMatchObject({ worktreeId: wtId, status: "merged", baseBranch: "main" });
    expect(repo.git(["show", "main:feature.txt"])).toBe("from the agent");
    expect(readManifest(repo.root).worktrees[wtId]?.status).toBe("merged");
    expect(readManifest(repo.root).worktrees[wtId]?.mergedAt).toBeDefined();

    const cleaned = await client.request("clean", { projectRoot: repo.root, worktreeId: wtId });
    expect(cleaned.cleaned).toEqual([
      expect.objectContaining({ worktreeId: wtId, killedAgents: [spawned.agentId], removedPath: true, deletedBranch: true }),
    ]);
    expect(existsSync(spawned.worktreePath ?? "")).toBe(false);
    expect(repo.git(["branch", "--list", "pu/fix-the-login-bug-now"])).toBe("");
    expect(readManifest(repo.root).worktrees[wtId]?.status).toBe("cleaned");
    expect(manifestAgent(repo.root, spawned.agentId)?.status).toBe("broken");
    expect(isProcessAlive(spawned.agent.pid ?? -1)).toBe(false);
    // The second worktree is untouched.
    expect(readManifest(repo.root).worktrees[second.worktreeId ?? ""]?.status).toBe("active");
  });

  it("a conflicting merge marks the worktree failed with the conflict and leaves both branches", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "conflict" });
    trackAgentPid(spawned.agent.pid);
    const wtId = spawned.worktreeId ?? "";
    repo.commit({ "README.md": "from the worktree\n" }, "worktree edit", spawned.worktreePath);
    repo.commit({ "README.md": "from main\n" }, "main edit");

    await expect(client.request("merge", { projectRoot: repo.root, worktreeId: wtId })).rejects.toMatchObject({
      code: "MERGE_CONFLICT",
      message: expect.stringContaining("README.md"),
    });
    const wt = readManifest(repo.root).worktrees[wtId] as Record<string, unknown> | undefined;
    expect(wt).toMatchObject({ status: "failed", error: expect.stringContaining("README.md") });
    expect(repo.git(["show", "main:README.md"])).toBe("from main");
    expect(repo.git(["show", "pu/conflict:README.md"])).toBe("from the worktree");
    expect(repo.git(["status", "--porcelain"])).toBe("");
  });

  it("spawns into an existing worktree and at the root, and renames", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const first = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "shared" });
    trackAgentPid(first.agent.pid);
    const joined = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, worktree: "shared", name: "Helper" });
    trackAgentPid(joined.agent.pid);
    expect(joined).toMatchObject({ worktreeId: first.worktreeId, cwd: first.worktreePath });
    expect(joined.agent.name).toBe("Helper");
    const atRoot = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, root: true });
    trackAgentPid(atRoot.agent.pid);
    expect(atRoot.cwd).toBe(repo.root);
    expect(readManifest(repo.root).agents[atRoot.agentId]).toBeDefined();

    await client.request("rename", { projectRoot: repo.root, target: joined.agentId, name: "Reviewer bot" });
    await client.request("rename", { projectRoot: repo.root, target: first.worktreeId ?? "", name: "Shared Work" });
    const m = readManifest(repo.root);
    expect(m.worktrees[first.worktreeId ?? ""]).toMatchObject({ name: "shared-work", branch: "pu/shared" });
    expect(manifestAgent(repo.root, joined.agentId)?.name).toBe("Reviewer bot");

    await expect(
      client.request("clean", { projectRoot: repo.root, worktreeId: first.worktreeId ?? "", callerAgentId: joined.agentId }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("calling agent") });
    const result = await client.request("kill", { projectRoot: repo.root, target: "worktrees" });
    expect(result.killed.map((k) => k.agentId).sort()).toEqual([first.agentId, joined.agentId].sort());
    expect((await client.request("status", { projectRoot: repo.root })).agents[atRoot.agentId]?.live).toBe(true);
  });
});
