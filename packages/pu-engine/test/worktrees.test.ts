import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isPuError, type PuError } from "@pu/core/errors";
import { diffWorktree } from "../src/git/diff.js";
import { mergeWorktree, MergeConflictError } from "../src/git/merge.js";
import { currentBranch, gitTopLevel } from "../src/git/runner.js";
import { createWorktree, excludePuDir, removeWorktree, workAtRisk, type CreatedWorktree } from "../src/git/worktree.js";
import { isolateGitConfig, makeTempRepo, type TempRepo } from "./helpers/git-repo.js";

let restoreEnv: () => void;
beforeAll(() => {
  restoreEnv = isolateGitConfig();
});
afterAll(() => restoreEnv());

let repo: TempRepo;
let worktreesDir: string;
beforeEach(async () => {
  repo = makeTempRepo();
  worktreesDir = path.join(repo.root, ".pu", "worktrees");
  await excludePuDir(repo.root);
});
afterEach(() => repo.cleanup());

async function expectPuError(promise: Promise<unknown>, code: string, messagePart?: string | RegExp): Promise<PuError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected the call to fail").toBeDefined();
  if (!isPuError(error)) throw error;
  expect(error.code).toBe(code);
  if (messagePart) expect(error.message).toMatch(messagePart);
  return error;
}

function create(name: string, extra: { base?: string; envFiles?: string[]; worktreeId?: string } = {}): Promise<CreatedWorktree> {
  return createWorktree({ projectRoot: repo.root, worktreesDir, worktreeId: extra.worktreeId ?? `wt-${name}`, name, ...extra });
}

function branches(): string[] {
  return repo.git(["for-each-ref", "--format=%(refname:short)", "refs/heads"]).split("\n").filter(Boolean);
}

function registeredWorktrees(): string[] {
  return repo
    .git(["worktree", "list", "--porcelain"])
    .split("\n")
    .filter((l) => l.startsWith("worktree "))
    .map((l) => l.slice("worktree ".length));
}

function status(cwd = repo.root): string {
  return repo.git(["status", "--porcelain"], cwd);
}

describe("repository facts", () => {
  it("finds the top level and the current branch, and null outside a repo or when detached", async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), "pu-nogit-"));
    try {
      mkdirSync(path.join(repo.root, "sub"));
      expect(await gitTopLevel(path.join(repo.root, "sub"))).toBe(repo.root);
      expect(await gitTopLevel(outside)).toBeNull();
      expect(await gitTopLevel(path.join(outside, "missing"))).toBeNull();
      expect(await currentBranch(repo.root)).toBe("main");
      repo.git(["checkout", "-q", "--detach"]);
      expect(await currentBranch(repo.root)).toBeNull();
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("excludes .pu/ once, however often it is asked", async () => {
    await excludePuDir(repo.root);
    await excludePuDir(repo.root);
    const exclude = readFileSync(path.join(repo.root, ".git", "info", "exclude"), "utf8");
    expect(exclude.split("\n").filter((l) => l === "/.pu/")).toHaveLength(1);
    repo.write(".pu/manifest.json", "{}\n");
    expect(status()).toBe("");
  });
});

describe("createWorktree", () => {
  it("creates pu/<name> from the current branch, records the base and copies env files", async () => {
    repo.commit({ ".gitignore": ".env\nconfig/local.env\n" }, "ignore env files");
    repo.write(".env", "SECRET=1\n");
    repo.write("config/local.env", "LOCAL=1\n");

    const created = await create("fix-auth", { envFiles: [".env", "config/local.env", "missing.env"] });

    expect(created).toMatchObject({
      path: path.join(worktreesDir, "wt-fix-auth"),
      branch: "pu/fix-auth",
      baseBranch: "main",
      baseCommit: repo.head(),
    });
    expect(branches()).toContain("pu/fix-auth");
    expect(repo.git(["rev-parse", "--abbrev-ref", "HEAD"], created.path)).toBe("pu/fix-auth");
    expect(readFileSync(path.join(created.path, "README.md"), "utf8")).toBe("hello\n");
    expect(readFileSync(path.join(created.path, ".env"), "utf8")).toBe("SECRET=1\n");
    expect(readFileSync(path.join(created.path, "config", "local.env"), "utf8")).toBe("LOCAL=1\n");
    expect(created.notes).toEqual([expect.stringContaining("missing.env")]);
    // pu's directory (with the worktree inside it) never shows in the project's status.
    expect(status()).toBe("");
    expect(status(created.path)).toBe("");
  });

  it("records a branch base by name and a commit base by its hash", async () => {
    const first = repo.head();
    repo.git(["branch", "release"]);
    repo.commit({ "a.txt": "a\n" }, "second");

    const fromBranch = await create("one", { base: "release" });
    expect(fromBranch.baseBranch).toBe("release");
    expect(repo.head(fromBranch.path)).toBe(first);

    const fromCommit = await create("two", { base: first.slice(0, 10) });
    expect(fromCommit.baseBranch).toBe(first);
    expect(repo.head(fromCommit.path)).toBe(first);
  });

  it("refuses a detached HEAD without --base (no branch to merge into), and takes an explicit base", async () => {
    repo.git(["checkout", "-q", "--detach"]);
    await expectPuError(create("detached"), "INVALID_ARGUMENT", /is on a detached HEAD \([0-9a-f]{12}\), so there is no branch .* pass --base BRANCH/);
    expect(registeredWorktrees()).toEqual([repo.root]);
    const created = await create("detached", { base: "main" });
    expect(created.baseBranch).toBe("main");
  });

  it("explains a repository without commits instead of naming a missing base", async () => {
    const empty = makeTempRepo("pu-empty-");
    try {
      empty.git(["checkout", "-q", "--orphan", "fresh"]);
      empty.git(["rm", "-q", "--cached", "README.md"]);
      await expectPuError(
        createWorktree({ projectRoot: empty.root, worktreesDir: path.join(empty.root, ".pu", "worktrees"), worktreeId: "wt-a", name: "a" }),
        "INVALID_STATE",
        /no commits on fresh yet; make a first commit/,
      );
    } finally {
      empty.cleanup();
    }
  });

  it("takes the next free name when the branch exists, and leaves that branch alone", async () => {
    repo.git(["branch", "pu/taken"]);
    repo.git(["branch", "pu/taken-2"]);
    const before = repo.git(["rev-parse", "pu/taken"]);
    const created = await create("taken");
    expect(created).toMatchObject({ name: "taken-3", branch: "pu/taken-3" });
    expect(repo.git(["rev-parse", "pu/taken"])).toBe(before);
  });

  it("refuses a base that does not exist, naming it, and leaves nothing behind", async () => {
    await expectPuError(create("x", { base: "no-such-branch" }), "INVALID_ARGUMENT", /no-such-branch/);
    expect(existsSync(path.join(worktreesDir, "wt-x"))).toBe(false);
    expect(branches()).toEqual(["main"]);
    expect(registeredWorktrees()).toEqual([repo.root]);
  });

  it("rolls back the worktree and branch when copying env files fails", async () => {
    const outsideFile = path.join(path.dirname(repo.root), "secret.env");
    writeFileSync(outsideFile, "NOPE=1\n");
    await expectPuError(create("leaky", { envFiles: ["../secret.env"] }), "INVALID_ARGUMENT", /outside the project root/);
    expect(existsSync(path.join(worktreesDir, "wt-leaky"))).toBe(false);
    expect(branches()).toEqual(["main"]);
    expect(registeredWorktrees()).toEqual([repo.root]);
  });
});

describe("diffWorktree", () => {
  it("counts committed, uncommitted and untracked changes against the merge base", async () => {
    repo.commit({ ".gitignore": "*.log\n", "lib.txt": "one\ntwo\nthree\n" }, "base files");
    const wt = await create("work");
    // main moves on after the worktree left it; that must not show in the worktree's diff.
    repo.commit({ "main-only.txt": "x\n" }, "main moves on");

    repo.commit({ "feature.txt": "f1\nf2\n" }, "feature", wt.path);
    repo.write("lib.txt", "one\nTWO\nthree\n", wt.path);
    repo.write("notes/new file.txt", "n1\nn2\nn3", wt.path);
    repo.write("image.bin", Buffer.from([0, 1, 2, 0, 255, 0]), wt.path);
    repo.write("debug.log", "ignored\n", wt.path);

    const diff = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch: "main", stat: false });

    expect(diff.mergeBase).toBe(wt.baseCommit);
    const byPath = Object.fromEntries(diff.files.map((f) => [f.path, f]));
    expect(Object.keys(byPath).sort()).toEqual(["feature.txt", "image.bin", "lib.txt", "notes/new file.txt"]);
    expect(byPath["feature.txt"]).toMatchObject({ insertions: 2, deletions: 0 });
    expect(byPath["lib.txt"]).toMatchObject({ insertions: 1, deletions: 1 });
    expect(byPath["notes/new file.txt"]).toMatchObject({ insertions: 3, deletions: 0 });
    expect(byPath["image.bin"]).toMatchObject({ binary: true });
    expect(diff.insertions).toBe(6);
    expect(diff.deletions).toBe(1);
    expect(diff.patch).toContain("+TWO");
    expect(diff.patch).toContain("+n3");
    expect(diff.patch).not.toContain("main-only.txt");
    // The diff must not stage anything in the worktree.
    expect(status(wt.path).split("\n").sort()).toEqual([" M lib.txt", "?? image.bin", "?? notes/"]);
  });

  it("leaves out the env files pu copied in: their contents are secrets, not the agent's change", async () => {
    const wt = await create("with-env");
    repo.write(".env", "SECRET=1\n", wt.path);
    repo.write("config/.env.local", "TOKEN=2\n", wt.path);
    repo.write("work.txt", "done\n", wt.path);
    const diff = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch: "main", envFiles: [".env", "./config/.env.local"] });
    expect(diff.files.map((f) => f.path)).toEqual(["work.txt"]);
    expect(diff.patch).not.toContain("SECRET");
    expect(diff.patch).not.toContain("TOKEN");
  });

  it("omits the patch in stat mode and reports an untouched worktree as empty", async () => {
    const wt = await create("quiet");
    const empty = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch: "main", stat: true });
    expect(empty).toMatchObject({ files: [], insertions: 0, deletions: 0 });

    repo.write("x.txt", "x\n", wt.path);
    const stat = await diffWorktree({ path: wt.path, branch: wt.branch, baseBranch: "main", stat: true });
    expect(stat.files).toEqual([{ path: "x.txt", insertions: 1, deletions: 0 }]);
    expect(stat.patch).toBeUndefined();
  });
});

describe("mergeWorktree", () => {
  async function worktreeWithCommit(name: string, files: Record<string, string>, base?: string): Promise<CreatedWorktree> {
    const wt = await create(name, base ? { base } : {});
    repo.commit(files, `work on ${name}`, wt.path);
    return wt;
  }

  function merge(wt: CreatedWorktree, strategy: "merge" | "squash" | "ff-only", message?: string) {
    return mergeWorktree({ projectRoot: repo.root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, strategy, ...(message ? { message } : {}) });
  }

  it("makes a merge commit on the checked-out base", async () => {
    const wt = await worktreeWithCommit("feat", { "feat.txt": "feature\n" });
    const branchHead = repo.head(wt.path);
    const mainBefore = repo.head();

    const result = await merge(wt, "merge");

    expect(result.alreadyUpToDate).toBe(false);
    expect(result.commit).toBe(repo.head());
    expect(repo.git(["log", "-1", "--format=%P"]).split(" ")).toEqual([mainBefore, branchHead]);
    expect(repo.git(["log", "-1", "--format=%s"])).toBe("Merge pu/feat");
    expect(readFileSync(path.join(repo.root, "feat.txt"), "utf8")).toBe("feature\n");
    expect(status()).toBe("");
  });

  it("squashes into one new commit on the base and keeps the branch", async () => {
    const wt = await worktreeWithCommit("sq", { "a.txt": "a\n" });
    repo.commit({ "b.txt": "b\n" }, "second", wt.path);
    const branchHead = repo.head(wt.path);
    const mainBefore = repo.head();

    const result = await merge(wt, "squash", "Add a and b");

    expect(repo.git(["rev-list", "--count", `${mainBefore}..main`])).toBe("1");
    expect(repo.git(["log", "-1", "--format=%P"])).toBe(mainBefore);
    expect(repo.git(["log", "-1", "--format=%s"])).toBe("Add a and b");
    expect(result.commit).toBe(repo.head());
    expect(readFileSync(path.join(repo.root, "a.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(path.join(repo.root, "b.txt"), "utf8")).toBe("b\n");
    expect(repo.git(["rev-parse", "pu/sq"])).toBe(branchHead);
    expect(status()).toBe("");
  });

  it("fast-forwards with ff-only, and refuses when the base has diverged", async () => {
    const wt = await worktreeWithCommit("ff", { "ff.txt": "ff\n" });
    const result = await merge(wt, "ff-only");
    expect(repo.head()).toBe(repo.head(wt.path));
    expect(result).toEqual({ commit: repo.head(wt.path), alreadyUpToDate: false });

    const diverged = await worktreeWithCommit("div", { "div.txt": "d\n" });
    const mainHead = repo.commit({ "other.txt": "o\n" }, "main moves on");
    await expectPuError(merge(diverged, "ff-only"), "INVALID_STATE", /cannot fast-forward main.*use the default merge or --squash/);
    expect(repo.head()).toBe(mainHead);
    expect(status()).toBe("");
  });

  it("reports a branch with nothing new as already up to date", async () => {
    const wt = await create("idle");
    const mainHead = repo.head();
    expect(await merge(wt, "merge")).toEqual({ commit: mainHead, alreadyUpToDate: true });
    expect(repo.head()).toBe(mainHead);
  });

  for (const strategy of ["merge", "squash"] as const) {
    it(`on conflict (${strategy}) names the files and leaves both branches and the checkout as they were`, async () => {
      repo.commit({ "a.txt": "base\n", "b.txt": "base\n" }, "shared files");
      const wt = await worktreeWithCommit("clash", { "a.txt": "branch\n", "b.txt": "branch\n", "c.txt": "new\n" });
      const branchHead = repo.head(wt.path);
      const mainHead = repo.commit({ "a.txt": "main\n", "b.txt": "main\n" }, "main edits");
      repo.write("scratch.txt", "untracked in root\n");

      const error = await expectPuError(merge(wt, strategy), "MERGE_CONFLICT", "merge of pu/clash into main conflicts in: a.txt, b.txt");

      expect(error).toBeInstanceOf(MergeConflictError);
      expect((error as MergeConflictError).details.conflicts).toEqual(["a.txt", "b.txt"]);
      expect(repo.head()).toBe(mainHead);
      expect(repo.git(["rev-parse", "pu/clash"])).toBe(branchHead);
      expect(status()).toBe("?? scratch.txt");
      expect(readFileSync(path.join(repo.root, "a.txt"), "utf8")).toBe("main\n");
      expect(existsSync(path.join(repo.root, "c.txt"))).toBe(false);
      expect(existsSync(path.join(repo.root, ".git", "MERGE_HEAD"))).toBe(false);
    });
  }

  it("refuses when the base checkout has uncommitted changes to tracked files, but not for untracked ones", async () => {
    const wt = await worktreeWithCommit("careful", { "c.txt": "c\n" });
    const mainHead = repo.head();
    repo.write("README.md", "edited but not committed\n");

    await expectPuError(merge(wt, "merge"), "INVALID_STATE", /main is checked out at .* uncommitted changes \(README.md\)/);
    expect(repo.head()).toBe(mainHead);
    expect(readFileSync(path.join(repo.root, "README.md"), "utf8")).toBe("edited but not committed\n");

    repo.git(["checkout", "--", "README.md"]);
    repo.write("untracked.txt", "mine\n");
    const result = await merge(wt, "merge");
    expect(result.commit).toBe(repo.head());
    expect(readFileSync(path.join(repo.root, "c.txt"), "utf8")).toBe("c\n");
    expect(readFileSync(path.join(repo.root, "untracked.txt"), "utf8")).toBe("mine\n");
  });

  it("refuses when the pu worktree has uncommitted changes, listing them", async () => {
    const wt = await worktreeWithCommit("wip", { "w.txt": "w\n" });
    repo.write("w.txt", "changed\n", wt.path);
    repo.write("new.txt", "new\n", wt.path);
    const mainHead = repo.head();
    await expectPuError(merge(wt, "merge"), "INVALID_STATE", /uncommitted changes \(.*w\.txt.*\); commit them in the worktree first/);
    expect(repo.head()).toBe(mainHead);
  });

  it("does not count the env files pu copied in as uncommitted work, but still counts other untracked files", async () => {
    repo.write(".env", "SECRET=1\n");
    const wt = await create("envy", { envFiles: [".env"] });
    repo.commit({ "e.txt": "e\n" }, "work on envy", wt.path);
    const withEnv = { projectRoot: repo.root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, strategy: "merge" as const, ignoreUntracked: [".env"] };
    repo.write("stray.txt", "stray\n", wt.path);
    await expectPuError(mergeWorktree(withEnv), "INVALID_STATE", /uncommitted changes \(stray\.txt\)/);
    rmSync(path.join(wt.path, "stray.txt"));
    const outcome = await mergeWorktree(withEnv);
    expect(outcome.alreadyUpToDate).toBe(false);
    expect(repo.git(["show", "main:e.txt"])).toBe("e");
  });

  it("merges into a base that is not checked out through a temporary worktree and moves its ref", async () => {
    repo.git(["branch", "release"]);
    const releaseBefore = repo.git(["rev-parse", "release"]);
    const wt = await worktreeWithCommit("rel", { "r.txt": "r\n" }, "release");
    expect(wt.baseBranch).toBe("release");
    const branchHead = repo.head(wt.path);
    const mainHead = repo.head();

    const result = await merge(wt, "merge");

    expect(repo.git(["rev-parse", "release"])).toBe(result.commit);
    expect(repo.git(["log", "-1", "--format=%P", "release"]).split(" ")).toEqual([releaseBefore, branchHead]);
    expect(repo.git(["show", "release:r.txt"])).toBe("r");
    expect(repo.head()).toBe(mainHead);
    expect(status()).toBe("");
    expect(registeredWorktrees()).toEqual([repo.root, wt.path]);
    expect(readdirSync(worktreesDir)).toEqual(["wt-rel"]);
  });

  it("fast-forwards a base that is not checked out by moving its ref", async () => {
    repo.git(["branch", "release"]);
    const wt = await worktreeWithCommit("relff", { "f.txt": "f\n" }, "release");
    const result = await merge(wt, "ff-only");
    expect(result).toEqual({ commit: repo.head(wt.path), alreadyUpToDate: false });
    expect(repo.git(["rev-parse", "release"])).toBe(repo.head(wt.path));
    expect(registeredWorktrees()).toEqual([repo.root, wt.path]);
  });

  it("leaves an unchecked-out base untouched on conflict and cleans up the temporary worktree", async () => {
    repo.git(["branch", "release"]);
    const wt = await worktreeWithCommit("relclash", { "README.md": "branch\n" }, "release");
    repo.git(["checkout", "-q", "release"]);
    const releaseHead = repo.commit({ "README.md": "release\n" }, "release edit");
    repo.git(["checkout", "-q", "main"]);

    const error = await expectPuError(merge(wt, "squash"), "MERGE_CONFLICT", /conflicts in: README.md/);
    expect((error as MergeConflictError).details.conflicts).toEqual(["README.md"]);
    expect(repo.git(["rev-parse", "release"])).toBe(releaseHead);
    expect(registeredWorktrees()).toEqual([repo.root, wt.path]);
    expect(readdirSync(worktreesDir)).toEqual(["wt-relclash"]);
  });
});

describe("removeWorktree", () => {
  function remove(wt: CreatedWorktree, deleteBranch?: boolean) {
    return removeWorktree({ projectRoot: repo.root, worktreesDir, path: wt.path, branch: wt.branch, ...(deleteBranch === undefined ? {} : { deleteBranch }) });
  }

  it("removes the worktree and its branch, and a second call says it is all gone", async () => {
    const wt = await create("done");
    repo.write("dirty.txt", "uncommitted work\n", wt.path);

    const first = await remove(wt);
    expect(first).toEqual({ removedPath: true, deletedBranch: true, notes: [] });
    expect(existsSync(wt.path)).toBe(false);
    expect(branches()).toEqual(["main"]);
    expect(registeredWorktrees()).toEqual([repo.root]);

    const second = await remove(wt);
    expect(second.removedPath).toBe(false);
    expect(second.deletedBranch).toBe(false);
    expect(second.notes).toEqual([expect.stringContaining("already gone"), expect.stringContaining("branch pu/done was already gone")]);
  });

  it("never deletes a branch outside pu/ (a manifest naming main), whatever the entry says", async () => {
    const wt = await create("named-main");
    // With another branch checked out, git itself would let main go.
    repo.git(["checkout", "-q", "-b", "elsewhere"]);
    const result = await removeWorktree({ projectRoot: repo.root, worktreesDir, path: wt.path, branch: "main" });
    expect(result).toMatchObject({ removedPath: true, deletedBranch: false });
    expect(result.notes).toEqual([expect.stringContaining("kept branch main")]);
    expect(branches()).toContain("main");
  });

  it("keeps the branch when asked", async () => {
    const wt = await create("keep");
    const result = await remove(wt, false);
    expect(result).toMatchObject({ removedPath: true, deletedBranch: false });
    expect(branches()).toContain("pu/keep");
  });

  it("cleans up after a worktree directory someone already deleted", async () => {
    const wt = await create("vanished");
    rmSync(wt.path, { recursive: true, force: true });
    const result = await remove(wt);
    expect(result).toMatchObject({ removedPath: false, deletedBranch: true });
    expect(result.notes).toEqual([expect.stringContaining("already gone")]);
    expect(registeredWorktrees()).toEqual([repo.root]);
    expect(branches()).toEqual(["main"]);
  });

  it("deletes a locked worktree's directory by hand when git refuses", async () => {
    const wt = await create("locked");
    repo.git(["worktree", "lock", wt.path]);
    const result = await remove(wt);
    expect(result).toMatchObject({ removedPath: true, deletedBranch: true });
    expect(result.notes).toEqual([expect.stringContaining("deleted")]);
    expect(existsSync(wt.path)).toBe(false);
    expect(registeredWorktrees()).toEqual([repo.root]);
    expect(branches()).toEqual(["main"]);
  });

  it("deletes an unregistered directory inside the worktrees dir, but never one outside it", async () => {
    const stray = path.join(worktreesDir, "wt-stray");
    mkdirSync(path.join(stray, "deep"), { recursive: true });
    writeFileSync(path.join(stray, "deep", "f.txt"), "x");
    const inside = await removeWorktree({ projectRoot: repo.root, worktreesDir, path: stray, branch: "pu/stray" });
    expect(inside.removedPath).toBe(true);
    expect(existsSync(stray)).toBe(false);

    const precious = path.join(path.dirname(repo.root), "precious");
    mkdirSync(precious);
    writeFileSync(path.join(precious, "keep.txt"), "keep");
    await expectPuError(
      removeWorktree({ projectRoot: repo.root, worktreesDir, path: precious, branch: "pu/precious" }),
      "GIT_ERROR",
      /pu will not delete it/,
    );
    expect(readFileSync(path.join(precious, "keep.txt"), "utf8")).toBe("keep");

    // A registered worktree of the person's own, outside pu's directory, with uncommitted work:
    // git would remove it with --force; pu leaves it and its branch alone.
    const own = path.join(path.dirname(repo.root), "own-worktree");
    repo.git(["worktree", "add", "-q", "-b", "feature", own]);
    writeFileSync(path.join(own, "draft.txt"), "unsaved");
    await expectPuError(removeWorktree({ projectRoot: repo.root, worktreesDir, path: own, branch: "feature" }), "GIT_ERROR", /outside/);
    expect(readFileSync(path.join(own, "draft.txt"), "utf8")).toBe("unsaved");
    expect(branches()).toContain("feature");

    // A symlink inside the worktrees dir that points outside is judged by where it leads.
    const link = path.join(worktreesDir, "wt-link");
    const { symlinkSync } = await import("node:fs");
    symlinkSync(precious, link);
    await expectPuError(removeWorktree({ projectRoot: repo.root, worktreesDir, path: link, branch: "pu/link" }), "GIT_ERROR");
    expect(readFileSync(path.join(precious, "keep.txt"), "utf8")).toBe("keep");
  });
});

describe("git's own words in a refused merge", () => {
  it("names the files git says a merge would overwrite", async () => {
    const wt = await create("adds");
    repo.commit({ "new-a.txt": "branch\n", "new-b.txt": "branch\n" }, "add two files", wt.path);
    writeFileSync(path.join(repo.root, "new-a.txt"), "mine, untracked\n");
    writeFileSync(path.join(repo.root, "new-b.txt"), "mine, untracked\n");
    const error = await expectPuError(
      mergeWorktree({ projectRoot: repo.root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, strategy: "merge" }),
      "GIT_ERROR",
    );
    expect(error.message).toMatch(/would be overwritten by merge: new-a\.txt, new-b\.txt/);
    expect(readFileSync(path.join(repo.root, "new-a.txt"), "utf8")).toBe("mine, untracked\n");
  });
});

describe("workAtRisk (what clean would throw away)", () => {
  function risk(wt: CreatedWorktree, ignoreUntracked: string[] = []) {
    return workAtRisk({ projectRoot: repo.root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, ignoreUntracked });
  }

  it("counts commits the base lacks and uncommitted files, but not pu's copied env files", async () => {
    const wt = await create("risky");
    expect(await risk(wt)).toEqual({ uncommittedFiles: [], unmergedCommits: 0 });
    repo.commit({ "a.txt": "a\n" }, "one", wt.path);
    repo.commit({ "b.txt": "b\n" }, "two", wt.path);
    writeFileSync(path.join(wt.path, "notes.txt"), "draft\n");
    writeFileSync(path.join(wt.path, ".env.local"), "SECRET=1\n");
    expect(await risk(wt, [".env.local"])).toEqual({ uncommittedFiles: ["notes.txt"], unmergedCommits: 2 });
  });

  it("reports nothing unmerged once the branch is squash-merged (its commits are not ancestors of the base)", async () => {
    const wt = await create("squashed");
    repo.commit({ "a.txt": "a\n" }, "one", wt.path);
    repo.commit({ "b.txt": "b\n" }, "two", wt.path);
    await mergeWorktree({ projectRoot: repo.root, path: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, strategy: "squash" });
    expect(await risk(wt)).toEqual({ uncommittedFiles: [], unmergedCommits: 0 });
    repo.commit({ "c.txt": "c\n" }, "after the squash", wt.path);
    expect((await risk(wt)).unmergedCommits).toBeGreaterThan(0);
  });
});
