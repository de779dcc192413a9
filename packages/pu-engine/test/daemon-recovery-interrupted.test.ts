// A daemon SIGKILLed in the middle of a clean or of a ticket's final merge, and what the restarted
// daemon makes of it. A git hook in the project's .git/hooks holds git at the moment that matters
// (it waits on a file the test writes), so the kill lands there every time, not by luck.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { listAgents } from "@pu/core/manifest";
import type { Client } from "@pu/ipc/client";
import type { TempRepo } from "./helpers/git-repo.js";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, readManifest, startTestDaemon, trackAgentPid, trustProject, waitFor } from "./helpers/daemon.js";

afterEach(cleanupAll);

/**
 * A hook that, the first time `match` (shell) succeeds, says so in `reached` and waits until
 * the test writes `release` (its content is the hook's exit code). Later runs pass through.
 * It gives up after 30 s or when the test's temp dir is gone, so it never outlives a test.
 */
function installHoldingHook(repo: TempRepo, hook: string, match: string): { reached: string; release: (code: number) => void; done: string } {
  const dir = path.join(path.dirname(repo.root), `hold-${hook}`);
  mkdirSync(dir);
  const reached = path.join(dir, "reached");
  const done = path.join(dir, "done");
  const file = path.join(repo.root, ".git", "hooks", hook);
  writeFileSync(
    file,
    `#!/bin/sh
dir='${dir}'
[ -e "$dir/reached" ] && exit 0
${match} || exit 0
touch "$dir/reached"
n=0
while [ ! -e "$dir/release" ]; do
  [ -d "$dir" ] || exit 1
  n=$((n + 1)); [ "$n" -gt 1500 ] && exit 1
  sleep 0.02
done
code=$(cat "$dir/release")
touch "$dir/done"
exit "$code"
`,
  );
  chmodSync(file, 0o755);
  return { reached, done, release: (code) => writeFileSync(path.join(dir, "release"), String(code)) };
}

/** Waits until no git holds the repository's index (the held git, once released, has finished). */
async function gitSettled(repo: TempRepo, done: string): Promise<void> {
  await waitFor("the held git to finish", () => existsSync(done) && !existsSync(path.join(repo.root, ".git", "index.lock")));
  // The hook has returned; give git the moment it needs to write what it writes after it and exit.
  await new Promise((resolve) => setTimeout(resolve, 300));
}

async function spawnIdle(client: Client, repo: TempRepo, name: string): Promise<{ worktreeId: string; worktreePath: string; agentId: string }> {
  const s = await client.request("spawn", { projectRoot: repo.root, name, command: "sleep 60" });
  trackAgentPid(s.agent.pid);
  return { worktreeId: s.worktreeId ?? "", worktreePath: s.worktreePath ?? "", agentId: s.agentId };
}

// Held where `git branch -D pu/…` prepares the deletion: the worktree's directory is already
// removed, the branch not yet deleted. Exiting 1 there aborts the deletion, so the branch stays.
const BRANCH_DELETION = `grep -q ' refs/heads/pu/' && [ "$1" = prepared ]`;

describe("recovery of an operation a SIGKILL cut short", () => {
  it("finishes a pu clean the daemon died in: marked cleaned, its branch deleted, not listed as a usable worktree", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const wt = await spawnIdle(client, repo, "doomed");
    const hold = installHoldingHook(repo, "reference-transaction", BRANCH_DELETION);

    const cleaning = client.request("clean", { projectRoot: repo.root, worktreeId: wt.worktreeId }).catch((err: unknown) => err);
    await waitFor("git to be deleting the branch", () => existsSync(hold.reached));
    await daemon.crash();
    await cleaning;
    hold.release(1);
    await gitSettled(repo, hold.done);
    // What the crash left: the directory gone, the branch still there, the manifest unchanged.
    expect(existsSync(wt.worktreePath)).toBe(false);
    expect(repo.git(["branch", "--list", "pu/doomed"])).not.toBe("");
    expect(readManifest(repo.root).worktrees[wt.worktreeId]?.status).toBe("active");

    const second = await startTestDaemon(daemon.home);
    const entry = readManifest(repo.root).worktrees[wt.worktreeId] as Record<string, unknown> | undefined;
    expect(entry).toMatchObject({ status: "cleaned" });
    expect(entry?.cleaning).toBeUndefined();
    expect(listAgents(readManifest(repo.root)).find((a) => a.agent.id === wt.agentId)?.agent.status).toBe("broken");
    // The clean that was asked for (nothing at risk) is done: no branch left over.
    expect(repo.git(["branch", "--list", "pu/doomed"])).toBe("");
    const status = await (await second.client()).request("status", { projectRoot: repo.root });
    expect(status.worktrees[wt.worktreeId]?.status ?? "cleaned").toBe("cleaned");
    expect(readFileSync(path.join(daemon.home, "daemon.log"), "utf8")).toContain('"event":"recovery_clean_finished"');
  }, 60_000);

  it("keeps the branch of an interrupted clean when it gained a commit while the daemon was down", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const wt = await spawnIdle(client, repo, "kept");
    const hold = installHoldingHook(repo, "reference-transaction", BRANCH_DELETION);

    const cleaning = client.request("clean", { projectRoot: repo.root, worktreeId: wt.worktreeId }).catch((err: unknown) => err);
    await waitFor("git to be deleting the branch", () => existsSync(hold.reached));
    await daemon.crash();
    await cleaning;
    hold.release(1);
    await gitSettled(repo, hold.done);
    // Someone commits onto the branch before pu is back: that commit was never the clean's to discard.
    const tree = repo.git(["rev-parse", "pu/kept^{tree}"]);
    const newer = repo.git(["commit-tree", tree, "-p", "pu/kept", "-m", "work after the crash"]);
    repo.git(["update-ref", "refs/heads/pu/kept", newer]);

    await startTestDaemon(daemon.home);
    expect(repo.git(["rev-parse", "pu/kept"])).toBe(newer);
    const entry = readManifest(repo.root).worktrees[wt.worktreeId] as Record<string, unknown> | undefined;
    expect(entry).toMatchObject({ status: "active", error: expect.stringContaining("pu/kept") });
    expect(entry?.cleaning).toBeUndefined();
  }, 60_000);

  it("settles a ticket's final merge the daemon died in: the half-done merge is aborted and the ticket then merges and ends done", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, `defaultAgent: fake\nagents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`);
    mkdirSync(path.join(repo.root, ".pu", "workflows"), { recursive: true });
    writeFileSync(
      path.join(repo.root, ".pu", "workflows", "TASK.yaml"),
      `finish: merge\nsteps:\n  - name: work\n    prompt: "write work.txt ticket work"\n  - name: commit\n    prompt: "commit ticket work"\n`,
    );
    await trustProject(client, repo.root);
    // Held before git commits the merge: the main checkout has the merge staged.
    const hold = installHoldingHook(repo, "pre-merge-commit", "true");
    await client.request("ticket_create", { projectRoot: repo.root, title: "merge me", ticketType: "TASK" });
    await waitFor("the ticket's merge to be under way", () => existsSync(hold.reached), 30_000);
    for (const { agent } of listAgents(readManifest(repo.root))) trackAgentPid(agent.pid);
    const mainBefore = repo.head();
    await daemon.crash();
    // The hook refuses: git stops with the merge half done in main. Its stderr went with the
    // daemon, so it dies of the broken pipe before writing MERGE_HEAD: the merge is staged, unrecorded.
    hold.release(1);
    await gitSettled(repo, hold.done);
    expect(repo.git(["status", "--porcelain", "--untracked-files=no"])).toBe("A  work.txt");

    const second = await startTestDaemon(daemon.home);
    const client2 = await second.client();
    await waitFor("the ticket to end", async () => (await client2.request("ticket_show", { projectRoot: repo.root, ticketId: "TASK-0001" })).ticket.state === "done", 30_000);
    for (const { agent } of listAgents(readManifest(repo.root))) trackAgentPid(agent.pid);
    const history = (await client2.request("ticket_show", { projectRoot: repo.root, ticketId: "TASK-0001" })).ticket.history as { event: string; note?: string }[];
    expect(history.at(-1)).toMatchObject({ event: "done", note: "merged into main" });
    expect(existsSync(path.join(repo.root, ".git", "MERGE_HEAD"))).toBe(false);
    expect(repo.head()).not.toBe(mainBefore);
    expect(repo.git(["show", "HEAD:work.txt"])).toBe("ticket work");
    expect(repo.git(["status", "--porcelain", "--untracked-files=no"])).toBe("");
    const merged = Object.values(readManifest(repo.root).worktrees).find((w) => w.branch.startsWith("pu/"));
    expect(merged?.status).toBe("merged");
  }, 90_000);

  it("waits for the dead daemon's git merge that outlived it before settling, and records what it did", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const wt = await spawnIdle(client, repo, "late");
    repo.commit({ "late.txt": "late work\n" }, "late work", wt.worktreePath);
    const hold = installHoldingHook(repo, "pre-merge-commit", "true");
    const merging = client.request("merge", { projectRoot: repo.root, worktreeId: wt.worktreeId }).catch((err: unknown) => err);
    await waitFor("git to be committing the merge", () => existsSync(hold.reached));
    await daemon.crash();
    await merging;

    // The orphaned git is still held while the new daemon starts; it lets go a moment later.
    const letGo = setTimeout(() => hold.release(0), 1000);
    await startTestDaemon(daemon.home);
    clearTimeout(letGo);
    hold.release(0);
    // Had the start not waited, the orphan would go on to commit after recovery: look once it has.
    await gitSettled(repo, hold.done);
    expect(readManifest(repo.root).worktrees[wt.worktreeId]).toMatchObject({ status: "merged" });
    expect(repo.git(["show", "HEAD:late.txt"])).toBe("late work");
    expect(existsSync(path.join(repo.root, ".git", "MERGE_HEAD"))).toBe(false);
    expect(repo.git(["status", "--porcelain", "--untracked-files=no"])).toBe("");
  }, 60_000);
});
