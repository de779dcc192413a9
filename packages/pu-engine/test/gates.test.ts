// Git-hook gates: pre_commit triggers block commits in pu's worktrees (through the real
// hook scripts the daemon installs and a real `git commit`), never in the main checkout.
// The hooks folder pu's worktrees run is pu's own, in the home: hooks a repository carries
// never run, the person's own hooks do.
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { constants as osConstants } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, startTestDaemon, trackAgentPid, trustProject } from "./helpers/daemon.js";
import { runGit } from "./helpers/git-repo.js";

const here = path.dirname(fileURLToPath(import.meta.url));
// The hooks call `<node> <PU_CLI_BIN> gate pre-commit`: the real pu CLI (built dist, as
// `pnpm build` leaves it), so hook script, CLI and daemon are all under test here.
const PU_CLI_BIN = path.resolve(here, "../../pu-cli/bin/pu");

let savedCliBin: string | undefined;
beforeEach(() => {
  savedCliBin = process.env.PU_CLI_BIN;
  process.env.PU_CLI_BIN = PU_CLI_BIN;
});
afterEach(async () => {
  if (savedCliBin === undefined) delete process.env.PU_CLI_BIN;
  else process.env.PU_CLI_BIN = savedCliBin;
  await cleanupAll();
});

const NO_FORBIDDEN = `on: pre_commit
sequence:
  - gate:
      run: "if [ -e forbidden.txt ]; then echo 'forbidden.txt must not be committed'; exit 1; fi"
`;

function commit(cwd: string, file: string, message: string): { ok: true } | { ok: false; stderr: string } {
  writeFileSync(path.join(cwd, file), `${message}\n`);
  runGit(cwd, ["add", "--", file]);
  try {
    runGit(cwd, ["commit", "-q", "-m", message]);
    return { ok: true };
  } catch (err) {
    return { ok: false, stderr: String((err as { stderr?: unknown }).stderr ?? err) };
  }
}

/** An executable hook script at `file` that appends its name and its stdin to `marker`. */
function writeHook(file: string, marker: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\necho "$(basename "$0")" >> '${marker}'\ncat >> '${marker}'\n`);
  chmodSync(file, 0o755);
}

/** What a cloned repository can carry: `.pu/hooks/*`, committed with mode 755, each leaving a marker if run. */
function commitRepositoryHooks(repo: { root: string; git(args: string[]): string }, markers: string): string[] {
  const names = ["post-commit", "reference-transaction", "prepare-commit-msg", "post-checkout"];
  for (const name of names) writeHook(path.join(repo.root, ".pu", "hooks", name), path.join(markers, `repo-${name}`));
  // `-f`: pu init keeps .pu/ out of git status; a clone would have had them committed before.
  repo.git(["add", "-f", "--", ".pu/hooks"]);
  repo.git(["commit", "-q", "-m", "hooks a repository carries"]);
  return names.map((name) => path.join(markers, `repo-${name}`));
}

describe("git-hook gates", () => {
  it("a pre_commit gate blocks a commit in a pu worktree and leaves the main checkout alone", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    mkdirSync(path.join(repo.root, ".pu", "triggers"), { recursive: true });
    writeFileSync(path.join(repo.root, ".pu", "triggers", "no-forbidden.yaml"), NO_FORBIDDEN);
    await trustProject(client, repo.root);
    // The user's own hook keeps running everywhere (pu chains to it in its worktrees).
    const userHook = path.join(repo.root, ".git", "hooks", "pre-commit");
    writeFileSync(userHook, `#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/user-hook-ran"\n`);
    chmodSync(userHook, 0o755);

    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "gated" });
    trackAgentPid(spawned.agent.pid);
    const worktree = spawned.worktreePath ?? "";
    expect(worktree).toContain(path.join(".pu", "worktrees"));

    const blocked = commit(worktree, "forbidden.txt", "add the forbidden file");
    expect(blocked.ok).toBe(false);
    expect(blocked.ok ? "" : blocked.stderr).toContain("forbidden.txt must not be committed");
    expect(blocked.ok ? "" : blocked.stderr).toContain("pu: commit blocked by 1 failing pre-commit gate");
    expect(runGit(worktree, ["log", "--oneline"]).split("\n")).toHaveLength(1);

    runGit(worktree, ["rm", "-q", "--cached", "forbidden.txt"]);
    runGit(worktree, ["clean", "-qf"]);
    expect(commit(worktree, "fine.txt", "a fine change")).toEqual({ ok: true });
    expect(existsSync(path.join(worktree, "user-hook-ran"))).toBe(true);

    // The main checkout: same file, no pu gate, the user's hook still runs.
    expect(commit(repo.root, "forbidden.txt", "main may commit it")).toEqual({ ok: true });
    expect(existsSync(path.join(repo.root, "user-hook-ran"))).toBe(true);
    expect(() => runGit(repo.root, ["config", "--get", "core.hooksPath"])).toThrow();

    // Gate runs are recorded; the request answers the same way the hook saw it.
    writeFileSync(path.join(worktree, "forbidden.txt"), "again\n");
    const result = await client.request("gate", { projectRoot: repo.root, event: "pre_commit", cwd: worktree });
    expect(result.passed).toBe(false);
    expect(result.runs).toHaveLength(1);
    expect(result.runs[0]).toMatchObject({ triggerName: "no-forbidden", exitCode: 1, timedOut: false });
    const pushResult = await client.request("gate", { projectRoot: repo.root, event: "pre_push", cwd: worktree });
    expect(pushResult).toEqual({ passed: true, runs: [] });
  });

  it("a gate asked for from a subdirectory runs at the top of that checkout, as git's hooks do", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    mkdirSync(path.join(repo.root, ".pu", "triggers"), { recursive: true });
    writeFileSync(path.join(repo.root, ".pu", "triggers", "where.yaml"), `on: pre_push\nsequence:\n  - gate: { run: "pwd; test -f README.md" }\n`);
    await trustProject(client, repo.root);
    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "deep" });
    trackAgentPid(spawned.agent.pid);
    const worktree = spawned.worktreePath ?? "";
    const subdir = path.join(worktree, "src", "nested");
    mkdirSync(subdir, { recursive: true });

    const result = await client.request("gate", { projectRoot: repo.root, event: "pre_push", cwd: subdir });
    expect(result.runs[0]).toMatchObject({ passed: true, exitCode: 0 });
    expect(result.runs[0]?.outputTail.trim()).toBe(realpathSync(worktree));
  });

  it("a gate killed by a signal reports 128 + that signal's number", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    mkdirSync(path.join(repo.root, ".pu", "triggers"), { recursive: true });
    const usr1 = osConstants.signals.SIGUSR1;
    writeFileSync(
      path.join(repo.root, ".pu", "triggers", "signalled.yaml"),
      `on: pre_push\nsequence:\n  - gate: { run: "kill -USR1 $$", expect_exit: ${128 + usr1} }\n`,
    );
    await trustProject(client, repo.root);
    const result = await client.request("gate", { projectRoot: repo.root, event: "pre_push", cwd: repo.root });
    expect(result.runs[0]).toMatchObject({ exitCode: 128 + usr1, passed: true });
  });

  it("a gate that outlives its timeout is stopped and fails", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    mkdirSync(path.join(repo.root, ".pu", "triggers"), { recursive: true });
    writeFileSync(
      path.join(repo.root, ".pu", "triggers", "slow.yaml"),
      `on: pre_push\nsequence:\n  - gate: { run: "echo starting; sleep 30", timeout_seconds: 1 }\n`,
    );
    await trustProject(client, repo.root);
    const result = await client.request("gate", { projectRoot: repo.root, event: "pre_push", cwd: repo.root });
    expect(result.passed).toBe(false);
    expect(result.runs[0]).toMatchObject({ exitCode: null, timedOut: true });
    expect(result.runs[0]?.outputTail).toContain("starting");
    expect(result.runs[0]?.durationMs).toBeLessThan(25_000);
  });

  it("a pu worktree runs pu's hooks and the person's own, never the hooks a repository carries in .pu/hooks", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const markers = path.join(path.dirname(repo.root), "markers");
    mkdirSync(markers);
    const planted = commitRepositoryHooks(repo, markers);
    // The person's own hooks, in the repository's hooks folder: these are theirs to run.
    writeHook(path.join(repo.root, ".git", "hooks", "post-commit"), path.join(markers, "user-post-commit"));
    writeHook(path.join(repo.root, ".git", "hooks", "reference-transaction"), path.join(markers, "user-reference-transaction"));
    writeHook(path.join(repo.root, ".git", "hooks", "pre-push"), path.join(markers, "user-pre-push"));
    // A pre_push gate, so pu's own pre-push script does its work before chaining.
    mkdirSync(path.join(repo.root, ".pu", "triggers"), { recursive: true });
    writeFileSync(path.join(repo.root, ".pu", "triggers", "push-ok.yaml"), `on: pre_push\nsequence:\n  - gate: { run: "touch '${markers}/pu-pre-push-gate'" }\n`);
    await trustProject(client, repo.root);

    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "clean" });
    trackAgentPid(spawned.agent.pid);
    const worktree = spawned.worktreePath ?? "";
    const hooksPath = runGit(worktree, ["config", "--worktree", "--get", "core.hooksPath"]);
    expect(hooksPath.startsWith(path.join(daemon.home, "hooks") + path.sep)).toBe(true);
    rmSync(path.join(markers, "user-reference-transaction"), { force: true }); // the worktree's creation ran it in the main checkout

    expect(commit(worktree, "work.txt", "work in a pu worktree")).toEqual({ ok: true });
    for (const marker of planted) expect(existsSync(marker), marker).toBe(false);
    expect(readFileSync(path.join(markers, "user-post-commit"), "utf8")).toContain("post-commit");
    // Chained by exec: the person's hook still reads what git writes to the hook's stdin.
    expect(readFileSync(path.join(markers, "user-reference-transaction"), "utf8")).toContain(" refs/heads/pu/clean");

    const remote = path.join(path.dirname(repo.root), "remote.git");
    runGit(path.dirname(repo.root), ["init", "-q", "--bare", remote]);
    runGit(worktree, ["push", "-q", remote, "HEAD:refs/heads/pushed"]);
    const prePush = readFileSync(path.join(markers, "user-pre-push"), "utf8");
    expect(existsSync(path.join(markers, "pu-pre-push-gate"))).toBe(true);
    expect(prePush).toContain("refs/heads/pushed");
    expect(runGit(remote, ["rev-parse", "pushed"])).toBe(runGit(worktree, ["rev-parse", "HEAD"]));
    for (const marker of planted) expect(existsSync(marker), marker).toBe(false);

    // A stub only where the person has a hook (each one costs every commit a few git calls);
    // one they add later is chained from the next spawn on.
    expect(existsSync(path.join(hooksPath, "post-commit"))).toBe(true);
    expect(existsSync(path.join(hooksPath, "commit-msg"))).toBe(false);
    writeHook(path.join(repo.root, ".git", "hooks", "commit-msg"), path.join(markers, "user-commit-msg"));
    const next = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "after-new-hook" });
    trackAgentPid(next.agent.pid);
    expect(commit(worktree, "more.txt", "after the person added commit-msg")).toEqual({ ok: true });
    expect(existsSync(path.join(markers, "user-commit-msg"))).toBe(true);
  });

  it("a worktree an earlier pu pointed at <root>/.pu/hooks is re-pointed at pu's own hooks when the daemon starts", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const markers = path.join(path.dirname(repo.root), "markers");
    mkdirSync(markers);
    const [postCommit = ""] = commitRepositoryHooks(repo, markers);
    const spawned = await client.request("spawn", { projectRoot: repo.root, command: "sleep 60", name: "older" });
    trackAgentPid(spawned.agent.pid);
    const worktree = spawned.worktreePath ?? "";
    const ours = runGit(worktree, ["config", "--worktree", "--get", "core.hooksPath"]);
    // What an earlier pu left: the worktree on the repository's own .pu/hooks, which runs what it carries.
    const legacy = path.join(repo.root, ".pu", "hooks");
    runGit(worktree, ["config", "--worktree", "core.hooksPath", legacy]);
    expect(commit(worktree, "before.txt", "before the restart")).toEqual({ ok: true });
    expect(existsSync(postCommit)).toBe(true);
    rmSync(postCommit);
    await daemon.stop();

    await startTestDaemon(daemon.home);
    expect(runGit(worktree, ["config", "--worktree", "--get", "core.hooksPath"])).toBe(ours);
    expect(commit(worktree, "after.txt", "after the restart")).toEqual({ ok: true });
    expect(existsSync(postCommit)).toBe(false);
    // The repository's files are the person's: left where they are.
    expect(existsSync(path.join(legacy, "post-commit"))).toBe(true);
  });
});
