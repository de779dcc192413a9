// pu's git layer: every worktree, diff and merge operation the daemon performs.
// All functions take absolute paths and throw PuError with a code the CLI can act on.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { Mutex } from "async-mutex";
import { GitError, simpleGit, type SimpleGit } from "simple-git";
import { PuError } from "@pu/core/errors";
import type { DiffFile, WorktreeDiff } from "@pu/ipc/protocol";

// ---------------------------------------------------------------------------
// Running git

/** A git command that exited non-zero; kept internal, callers see PuError. */
// Extends GitError because simple-git wraps any other error type and loses the exit code.
class GitCommandError extends GitError {
  constructor(
    readonly exitCode: number,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(undefined, complaint(stderr) || complaint(stdout) || `git exited with status ${exitCode}`);
    this.name = "GitCommandError";
  }
}

// git prints progress ("Preparing worktree ...") before the line that says what went wrong,
// so the first fatal/error line is the one worth showing, with the tab-indented file list
// git puts under it ("would be overwritten by merge:" names the files only there).
function complaint(text: string): string {
  const lines = text.split("\n").filter((l) => l.trim().length > 0);
  const at = lines.findIndex((l) => /^(fatal|error):/.test(l.trim()));
  if (at < 0) return lines[0]?.trim() ?? "";
  const files: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (!/^\t/.test(line)) break;
    files.push(line.trim());
  }
  const head = lines[at]!.trim();
  return files.length === 0 ? head : `${head} ${files.join(", ")}`;
}

// simple-git resolves a command that exits non-zero with an empty stderr (e.g. `--quiet`
// probes) as a success, so every command is made to reject on any non-zero exit.
function gitAt(dir: string, extraEnv?: Record<string, string>): SimpleGit {
  const git = simpleGit({
    baseDir: dir,
    errors: (error, result) => {
      if (result.exitCode === 0) return error;
      return new GitCommandError(
        result.exitCode,
        Buffer.concat(result.stdOut).toString("utf8"),
        Buffer.concat(result.stdErr).toString("utf8"),
      );
    },
    // An explicit environment is screened by simple-git as if it were untrusted input; this one
    // is the daemon's own, and dropping config-location variables would change which config applies.
    unsafe: { allowUnsafeConfigPaths: true, allowUnsafeConfigEnvCount: true },
  });
  return extraEnv ? git.env({ ...nonInteractiveEnv(), ...extraEnv }) : git;
}

// Editors, pagers, credential prompts and transports: nothing pu runs with an explicit
// environment needs them, and simple-git refuses an explicit environment that sets them.
const INTERACTIVE_ENV = new Set([
  "EDITOR", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "PAGER", "GIT_PAGER", "GIT_ASKPASS", "SSH_ASKPASS",
  "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR",
]);

function nonInteractiveEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !INTERACTIVE_ENV.has(key.toUpperCase())) env[key] = value;
  }
  return env;
}

async function git(dir: string, args: string[], env?: Record<string, string>): Promise<string> {
  if (!existsSync(dir)) {
    throw new PuError("GIT_ERROR", `cannot run git in ${dir}: the directory does not exist`);
  }
  return gitAt(dir, env).raw(args);
}

/** Runs git and reports failure as a value, for probes where a non-zero exit is an answer. */
async function gitProbe(dir: string, args: string[]): Promise<{ ok: boolean; stdout: string; error?: GitCommandError }> {
  try {
    return { ok: true, stdout: await git(dir, args) };
  } catch (e) {
    if (e instanceof GitCommandError) return { ok: false, stdout: e.stdout, error: e };
    throw e;
  }
}

function gitFailure(what: string, e: unknown, fix?: string): PuError {
  if (e instanceof PuError) return e;
  const reason = e instanceof Error ? e.message : String(e);
  return new PuError("GIT_ERROR", `${what}: ${reason}${fix ? `; ${fix}` : ""}`, { cause: e });
}

async function gitOrFail(dir: string, args: string[], what: string, fix?: string): Promise<string> {
  try {
    return await git(dir, args);
  } catch (e) {
    throw gitFailure(what, e, fix);
  }
}

function splitNul(text: string): string[] {
  return text.split("\0").filter((s) => s.length > 0);
}

async function revParse(dir: string, ref: string): Promise<string | null> {
  const r = await gitProbe(dir, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]);
  const sha = r.stdout.trim();
  return r.ok && sha ? sha : null;
}

async function branchExists(dir: string, branch: string): Promise<boolean> {
  const r = await gitProbe(dir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]);
  return r.ok && r.stdout.trim().length > 0;
}

async function isAncestor(dir: string, ancestor: string, descendant: string): Promise<boolean> {
  const r = await gitProbe(dir, ["merge-base", "--is-ancestor", ancestor, descendant]);
  if (r.ok) return true;
  if (r.error?.exitCode === 1) return false;
  throw gitFailure(`cannot compare ${ancestor} with ${descendant}`, r.error);
}

// ---------------------------------------------------------------------------
// One repository change at a time

const repoLocks = new Map<string, Mutex>();

/**
 * Runs `fn` while no other worktree, branch or merge operation of the daemon touches the
 * project's repository. git is not safe against itself here: a `worktree add` reads every
 * other worktree's admin files and fails on one that a concurrent add has half written, and
 * two config writers collide on `.git/config.lock`. Not re-entrant: never nest.
 */
export function withRepoLock<T>(projectRoot: string, fn: () => Promise<T>): Promise<T> {
  const key = path.resolve(projectRoot);
  let lock = repoLocks.get(key);
  if (!lock) {
    lock = new Mutex();
    repoLocks.set(key, lock);
  }
  return lock.runExclusive(fn);
}

// ---------------------------------------------------------------------------
// Paths

/** `child` lies strictly below `parent` (lexically; resolve real paths first where links matter). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel.length > 0 && !rel.startsWith("..") && !path.isAbsolute(rel);
}

async function realpathOrNull(p: string): Promise<string | null> {
  try {
    return await fs.realpath(p);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Repository facts

/** The top level of the work tree containing dir, or null when dir is not in a git work tree. */
export async function gitTopLevel(dir: string): Promise<string | null> {
  if (!existsSync(dir)) return null;
  const r = await gitProbe(dir, ["rev-parse", "--show-toplevel"]);
  const top = r.stdout.trim();
  return r.ok && top ? top : null;
}

/** The branch checked out in repoDir, or null when HEAD is detached. */
export async function currentBranch(repoDir: string): Promise<string | null> {
  const r = await gitProbe(repoDir, ["symbolic-ref", "--quiet", "--short", "HEAD"]);
  if (r.ok) return r.stdout.trim() || null;
  if (r.error?.exitCode === 1) return null;
  throw gitFailure(`cannot read the current branch of ${repoDir}`, r.error, "is it a git repository?");
}

/** Keeps pu's own files (`.pu/`) out of `git status` and merges, without touching .gitignore. */
export async function excludePuDir(projectRoot: string): Promise<void> {
  const commonDir = (
    await gitOrFail(projectRoot, ["rev-parse", "--git-common-dir"], `cannot find the git directory of ${projectRoot}`, "is it a git repository?")
  ).trim();
  const excludeFile = path.join(path.resolve(projectRoot, commonDir), "info", "exclude");
  let text = "";
  try {
    text = await fs.readFile(excludeFile, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  if (text.split(/\r?\n/).some((line) => line.trim() === "/.pu/")) return;
  await fs.mkdir(path.dirname(excludeFile), { recursive: true });
  const separator = text.length > 0 && !text.endsWith("\n") ? "\n" : "";
  await fs.appendFile(excludeFile, `${separator}# pu workspace files\n/.pu/\n`);
}

// ---------------------------------------------------------------------------
// Create

export interface CreateWorktreeOptions {
  projectRoot: string;
  worktreesDir: string;
  worktreeId: string;
  /**
   * Normalized worktree name; the branch is `pu/<name>`. When that branch exists the next free
   * `<name>-2`, `<name>-3`… is used: choosing it under the repository lock is what keeps
   * parallel spawns with one name from colliding.
   */
  name: string;
  /** Branch or commit to start from; default the project root's current branch, else HEAD. */
  base?: string;
  /** Files to copy from the project root into the new worktree, relative to the root. */
  envFiles?: string[];
}

export interface CreatedWorktree {
  /** The name used (the one asked for, or it with a suffix when its branch was taken). */
  name: string;
  path: string;
  branch: string;
  /** The base branch name when the base names a local branch, else the base commit. */
  baseBranch: string;
  baseCommit: string;
  /** Things worth telling the user, such as env files that were not there to copy. */
  notes: string[];
}

export function createWorktree(options: CreateWorktreeOptions): Promise<CreatedWorktree> {
  return withRepoLock(options.projectRoot, () => createWorktreeLocked(options));
}

async function createWorktreeLocked(options: CreateWorktreeOptions): Promise<CreatedWorktree> {
  const { projectRoot, worktreesDir, worktreeId } = options;
  const worktreePath = path.join(worktreesDir, worktreeId);

  const refCheck = await gitProbe(projectRoot, ["check-ref-format", "--branch", `pu/${options.name}`]);
  if (!refCheck.ok) {
    throw new PuError("INVALID_ARGUMENT", `"pu/${options.name}" is not a valid git branch name; choose another --name`);
  }
  let name = options.name;
  for (let n = 2; await branchExists(projectRoot, `pu/${name}`); n++) name = `${options.name}-${n}`;
  const branch = `pu/${name}`;
  const current = await currentBranch(projectRoot);
  if (options.base === undefined && current === null) {
    const head = (await revParse(projectRoot, "HEAD"))?.slice(0, 12) ?? "no commit";
    throw new PuError(
      "INVALID_ARGUMENT",
      `${projectRoot} is on a detached HEAD (${head}), so there is no branch for the worktree's work to merge into; pass --base BRANCH`,
    );
  }
  const base = options.base ?? current ?? "HEAD";
  if (base.startsWith("-")) throw new PuError("INVALID_ARGUMENT", `base ref "${base}" is not a branch or commit; pass one to --base`);
  const baseCommit = await revParse(projectRoot, base);
  if (!baseCommit && options.base === undefined) {
    throw new PuError("INVALID_STATE", `${projectRoot} has no commits on ${base} yet; make a first commit before creating worktrees`);
  }
  if (!baseCommit) {
    throw new PuError("INVALID_ARGUMENT", `base ref "${base}" does not exist in ${projectRoot}; pass an existing branch or commit to --base`);
  }
  const baseBranch = await localBranchNamed(projectRoot, base) ?? baseCommit;
  if (existsSync(worktreePath)) {
    throw new PuError("INVALID_STATE", `worktree directory ${worktreePath} already exists; remove it or use another worktree id`);
  }

  await fs.mkdir(worktreesDir, { recursive: true });
  try {
    // Starting from the commit (not the ref name) keeps git from setting up tracking for remote bases.
    await gitOrFail(projectRoot, ["worktree", "add", "-b", branch, worktreePath, baseCommit], `cannot create worktree ${worktreePath}`);
    const notes = await copyEnvFiles(projectRoot, worktreePath, options.envFiles ?? []);
    return { name, path: worktreePath, branch, baseBranch, baseCommit, notes };
  } catch (e) {
    await rollBackCreate(projectRoot, worktreePath, branch);
    throw e;
  }
}

/** The local branch a ref names ("main", "refs/heads/main"), or null for commits, tags and remote branches. */
async function localBranchNamed(dir: string, ref: string): Promise<string | null> {
  // (rev-parse echoes --end-of-options here, so callers keep option-like refs out instead.)
  const r = await gitProbe(dir, ["rev-parse", "--symbolic-full-name", ref]);
  const full = r.stdout.trim();
  return r.ok && full.startsWith("refs/heads/") ? full.slice("refs/heads/".length) : null;
}

async function copyEnvFiles(projectRoot: string, worktreePath: string, envFiles: string[]): Promise<string[]> {
  const notes: string[] = [];
  const realRoot = await fs.realpath(projectRoot);
  for (const relative of envFiles) {
    const source = path.resolve(projectRoot, relative);
    const realSource = await realpathOrNull(source);
    const outside = !isInside(projectRoot, source) || (realSource !== null && !isInside(realRoot, realSource));
    if (outside) {
      throw new PuError("INVALID_ARGUMENT", `env file "${relative}" is outside the project root ${projectRoot}; list envFiles relative to the project root`);
    }
    if (realSource === null) {
      notes.push(`env file ${relative} not found in the project root; not copied`);
      continue;
    }
    const target = path.join(worktreePath, path.relative(projectRoot, source));
    try {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.cp(realSource, target, { recursive: true, force: true, dereference: true });
    } catch (e) {
      throw new PuError("IO_ERROR", `cannot copy env file ${relative} into ${worktreePath}: ${(e as Error).message}`, { cause: e });
    }
  }
  return notes;
}

async function rollBackCreate(projectRoot: string, worktreePath: string, branch: string): Promise<void> {
  await gitProbe(projectRoot, ["worktree", "remove", "--force", worktreePath]);
  await fs.rm(worktreePath, { recursive: true, force: true });
  await gitProbe(projectRoot, ["worktree", "prune"]);
  if (await branchExists(projectRoot, branch)) await gitProbe(projectRoot, ["branch", "-D", branch]);
}

// ---------------------------------------------------------------------------
// Work that removing a worktree would throw away

/**
 * Files a worktree holds that are not committed, less the untracked copies of `envFiles`
 * pu itself put there (those are pu's, not the agent's work).
 */
async function uncommittedWork(worktreePath: string, ignoreUntracked: string[]): Promise<string[]> {
  const copied = new Set(ignoreUntracked.map((file) => path.posix.normalize(file.split(path.sep).join("/"))));
  return (await uncommittedFiles(worktreePath, { includeUntracked: true, withStatus: true }))
    .filter(({ code, file }) => !(code === "??" && copied.has(file)))
    .map(({ file }) => file);
}

export interface WorkAtRiskOptions {
  projectRoot: string;
  path: string;
  branch: string;
  baseBranch?: string;
  ignoreUntracked?: string[];
}

export interface WorkAtRisk {
  uncommittedFiles: string[];
  /** Commits on the branch whose changes the base does not hold (0 after a squash merge). */
  unmergedCommits: number;
}

/**
 * What `git worktree remove --force` plus `git branch -D` would destroy. A branch counts as
 * merged when merging it into the base would change nothing, so a squash-merged branch (whose
 * commits are not ancestors of the base) is not reported as unmerged work.
 */
export async function workAtRisk(options: WorkAtRiskOptions): Promise<WorkAtRisk> {
  const { projectRoot, branch } = options;
  const uncommitted = existsSync(options.path) ? await uncommittedWork(options.path, options.ignoreUntracked ?? []) : [];
  const branchCommit = await revParse(projectRoot, `refs/heads/${branch}`);
  if (!branchCommit) return { uncommittedFiles: uncommitted, unmergedCommits: 0 };
  const baseCommit = options.baseBranch ? await revParse(projectRoot, `refs/heads/${options.baseBranch}`) : null;
  // Without a base to compare with, every commit no other branch holds is at risk.
  const exclusion = baseCommit ? [`^${baseCommit}`] : ["--not", `--exclude=${branch}`, "--branches"];
  const counted = await gitProbe(projectRoot, ["rev-list", "--count", branchCommit, ...exclusion]);
  let unmerged = counted.ok ? Number.parseInt(counted.stdout.trim(), 10) || 0 : 0;
  if (unmerged > 0 && baseCommit && (await mergeChangesNothing(projectRoot, baseCommit, branchCommit))) unmerged = 0;
  return { uncommittedFiles: uncommitted, unmergedCommits: unmerged };
}

async function mergeChangesNothing(dir: string, baseCommit: string, branchCommit: string): Promise<boolean> {
  const merged = await gitProbe(dir, ["merge-tree", "--write-tree", baseCommit, branchCommit]);
  if (!merged.ok) return false;
  const baseTree = await gitProbe(dir, ["rev-parse", `${baseCommit}^{tree}`]);
  return baseTree.ok && merged.stdout.split("\n")[0]?.trim() === baseTree.stdout.trim();
}

/** One clause naming what would be lost, e.g. "2 uncommitted files (a.ts, b.ts) and 3 unmerged commits". */
export function describeWorkAtRisk(risk: WorkAtRisk): string {
  const parts: string[] = [];
  const files = risk.uncommittedFiles.length;
  if (files > 0) parts.push(`${files} uncommitted file${files === 1 ? "" : "s"} (${summarize(risk.uncommittedFiles)})`);
  const commits = risk.unmergedCommits;
  if (commits > 0) parts.push(`${commits} commit${commits === 1 ? "" : "s"} not merged into its base`);
  return parts.join(" and ");
}

// ---------------------------------------------------------------------------
// Remove

export interface RemoveWorktreeOptions {
  projectRoot: string;
  worktreesDir: string;
  path: string;
  branch: string;
  deleteBranch?: boolean;
}

export interface RemovedWorktree {
  /** True when this call removed the directory (false when it was already gone). */
  removedPath: boolean;
  deletedBranch: boolean;
  notes: string[];
}

export function removeWorktree(options: RemoveWorktreeOptions): Promise<RemovedWorktree> {
  return withRepoLock(options.projectRoot, () => removeWorktreeLocked(options));
}

async function removeWorktreeLocked(options: RemoveWorktreeOptions): Promise<RemovedWorktree> {
  const { projectRoot, worktreesDir, branch, deleteBranch = true } = options;
  const worktreePath = options.path;
  const notes: string[] = [];
  let removedPath = false;

  if (!existsSync(worktreePath)) {
    notes.push(`worktree directory ${worktreePath} was already gone`);
  } else {
    const removal = await gitProbe(projectRoot, ["worktree", "remove", "--force", worktreePath]);
    if (removal.ok) {
      removedPath = true;
    } else {
      // git refuses unregistered or locked worktrees; deleting by hand is safe only inside pu's own directory.
      const realDir = await realpathOrNull(worktreesDir);
      const realPath = await realpathOrNull(worktreePath);
      if (realDir === null || realPath === null || !isInside(realDir, realPath)) {
        throw new PuError(
          "GIT_ERROR",
          `git could not remove worktree ${worktreePath} (${removal.error?.message ?? "unknown error"}) and it is outside ${worktreesDir}, so pu will not delete it; remove it yourself`,
        );
      }
      await gitProbe(projectRoot, ["worktree", "unlock", worktreePath]);
      await fs.rm(realPath, { recursive: true, force: true });
      removedPath = true;
      notes.push(`git could not remove the worktree (${removal.error?.message ?? "unknown error"}); deleted ${worktreePath} directly`);
    }
  }
  await gitProbe(projectRoot, ["worktree", "prune"]);

  let deletedBranch = false;
  if (deleteBranch) {
    if (!(await branchExists(projectRoot, branch))) {
      notes.push(`branch ${branch} was already gone`);
    } else {
      const deletion = await gitProbe(projectRoot, ["branch", "-D", branch]);
      if (deletion.ok) deletedBranch = true;
      else notes.push(`kept branch ${branch}: ${deletion.error?.message ?? "git refused to delete it"}`);
    }
  }
  return { removedPath, deletedBranch, notes };
}

// ---------------------------------------------------------------------------
// Diff

export interface DiffWorktreeOptions {
  path: string;
  branch: string;
  baseBranch: string;
  stat?: boolean;
}

export type WorktreeChanges = Omit<WorktreeDiff, "worktreeId" | "name">;

/** Everything the worktree changed since it left its base: commits, uncommitted edits and untracked files. */
export async function diffWorktree(options: DiffWorktreeOptions): Promise<WorktreeChanges> {
  const { branch, baseBranch, stat = false } = options;
  const worktreePath = options.path;
  if (!existsSync(worktreePath)) {
    throw new PuError("WORKTREE_NOT_FOUND", `worktree directory ${worktreePath} does not exist; run \`pu clean\` to drop it`);
  }
  const mergeBase = (
    await gitOrFail(worktreePath, ["merge-base", baseBranch, "HEAD"], `cannot find where ${branch} left ${baseBranch}`, "does the base branch still exist?")
  ).trim();

  // A throwaway copy of the index with untracked files marked intent-to-add lets one
  // `git diff <merge-base>` cover committed, uncommitted and untracked changes without
  // touching the worktree's real index.
  const tempDir = await fs.mkdtemp(path.join(os.tmpdir(), "pu-diff-"));
  try {
    const indexFile = path.join(tempDir, "index");
    const realIndex = path.resolve(worktreePath, (await gitOrFail(worktreePath, ["rev-parse", "--git-path", "index"], "cannot locate the worktree index")).trim());
    if (existsSync(realIndex)) await fs.copyFile(realIndex, indexFile);
    const env = { GIT_INDEX_FILE: indexFile };
    // Entries ending in "/" are nested repositories, which have no lines to count.
    const untracked = splitNul(await diffGit(worktreePath, ["ls-files", "--others", "--exclude-standard", "-z"], env))
      .filter((p) => !p.endsWith("/"));
    // In batches, so a worktree full of new files cannot overflow the argument list.
    for (let i = 0; i < untracked.length; i += 500) {
      const batch = untracked.slice(i, i + 500).map(literalPathspec);
      await diffGit(worktreePath, ["add", "--intent-to-add", "--", ...batch], env);
    }
    const common = ["--no-color", "--no-ext-diff", "--no-renames", mergeBase];
    const files = parseNumstat(await diffGit(worktreePath, ["diff", "--numstat", "-z", ...common], env));
    const changes: WorktreeChanges = {
      branch,
      baseBranch,
      mergeBase,
      files,
      insertions: files.reduce((n, f) => n + f.insertions, 0),
      deletions: files.reduce((n, f) => n + f.deletions, 0),
    };
    if (!stat) changes.patch = await diffGit(worktreePath, ["diff", "--patch", ...common], env);
    return changes;
  } finally {
    await fs.rm(tempDir, { recursive: true, force: true });
  }
}

function literalPathspec(p: string): string {
  return `:(literal)${p}`;
}

async function diffGit(dir: string, args: string[], env: Record<string, string>): Promise<string> {
  try {
    return await gitAt(dir, env).raw(args);
  } catch (e) {
    throw gitFailure(`cannot diff worktree ${dir}`, e);
  }
}

// `--numstat -z` without renames: "<added>\t<deleted>\t<path>\0", "-\t-\t<path>\0" for binary files.
function parseNumstat(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  for (const record of splitNul(text)) {
    const [added, deleted, ...rest] = record.split("\t");
    const filePath = rest.join("\t");
    if (added === undefined || deleted === undefined || !filePath) continue;
    if (added === "-" && deleted === "-") {
      files.push({ path: filePath, insertions: 0, deletions: 0, binary: true });
    } else {
      files.push({ path: filePath, insertions: Number(added), deletions: Number(deleted) });
    }
  }
  return files;
}

// ---------------------------------------------------------------------------
// Merge

export type MergeStrategy = "merge" | "squash" | "ff-only";

export interface MergeWorktreeOptions {
  projectRoot: string;
  /** The pu worktree whose branch is merged. */
  path: string;
  branch: string;
  baseBranch: string;
  strategy: MergeStrategy;
  message?: string;
  /** Where a temporary merge worktree may be made when the base is not checked out; default the worktree's parent. */
  worktreesDir?: string;
  /**
   * Untracked paths that do not count as uncommitted work: the env files pu copied into
   * the worktree itself (a `.env` the project does not ignore must not block every merge).
   */
  ignoreUntracked?: string[];
}

export interface MergeOutcome {
  /** The base branch's commit after the merge. */
  commit: string;
  alreadyUpToDate: boolean;
}

/** A merge that stopped on conflicts; `details.conflicts` lists the conflicting paths. */
export class MergeConflictError extends PuError {
  declare readonly details: { conflicts: string[] };

  constructor(branch: string, baseBranch: string, conflicts: string[]) {
    super("MERGE_CONFLICT", `merge of ${branch} into ${baseBranch} conflicts in: ${summarize(conflicts, 10)}; resolve it by hand or rebase ${branch}`, {
      details: { conflicts },
    });
  }
}

export function mergeWorktree(options: MergeWorktreeOptions): Promise<MergeOutcome> {
  return withRepoLock(options.projectRoot, () => mergeWorktreeLocked(options));
}

async function mergeWorktreeLocked(options: MergeWorktreeOptions): Promise<MergeOutcome> {
  const { projectRoot, branch, baseBranch, strategy } = options;
  const worktreePath = options.path;
  const message = options.message ?? (strategy === "squash" ? `Squash ${branch}` : `Merge ${branch}`);

  if (existsSync(worktreePath)) {
    const dirty = await uncommittedWork(worktreePath, options.ignoreUntracked ?? []);
    if (dirty.length > 0) {
      throw new PuError("INVALID_STATE", `worktree ${worktreePath} has uncommitted changes (${summarize(dirty)}); commit them in the worktree first`);
    }
  }
  const branchCommit = await revParse(projectRoot, `refs/heads/${branch}`);
  if (!branchCommit) throw new PuError("INVALID_STATE", `branch ${branch} no longer exists; there is nothing to merge`);
  const baseCommit = await revParse(projectRoot, `refs/heads/${baseBranch}`);
  if (!baseCommit) {
    throw new PuError("INVALID_STATE", `base branch ${baseBranch} does not exist; create it or merge ${branch} by hand`);
  }

  if (await isAncestor(projectRoot, branchCommit, baseCommit)) {
    return { commit: baseCommit, alreadyUpToDate: true };
  }
  if (strategy === "ff-only" && !(await isAncestor(projectRoot, baseCommit, branchCommit))) {
    throw new PuError("INVALID_STATE", `cannot fast-forward ${baseBranch} to ${branch}: ${baseBranch} has commits ${branch} lacks; use the default merge or --squash`);
  }

  const checkout = await findCheckout(projectRoot, baseBranch);
  if (checkout) {
    const dirty = await uncommittedFiles(checkout, { includeUntracked: false });
    if (dirty.length > 0) {
      throw new PuError("INVALID_STATE", `${baseBranch} is checked out at ${checkout} with uncommitted changes (${summarize(dirty)}); commit or stash them first`);
    }
    return mergeIn(checkout, { branch, baseBranch, strategy, message });
  }
  return mergeDetached(projectRoot, options.worktreesDir ?? path.dirname(worktreePath), {
    branch,
    baseBranch,
    baseCommit,
    branchCommit,
    strategy,
    message,
  });
}

function summarize(files: string[], limit = 5): string {
  const shown = files.slice(0, limit).join(", ");
  return files.length > limit ? `${shown} and ${files.length - limit} more` : shown;
}

async function uncommittedFiles(dir: string, options: { includeUntracked: boolean; withStatus?: false }): Promise<string[]>;
async function uncommittedFiles(
  dir: string,
  options: { includeUntracked: boolean; withStatus: true },
): Promise<{ code: string; file: string }[]>;
async function uncommittedFiles(
  dir: string,
  { includeUntracked, withStatus }: { includeUntracked: boolean; withStatus?: boolean },
): Promise<string[] | { code: string; file: string }[]> {
  const out = await gitOrFail(
    dir,
    ["status", "--porcelain", "-z", `--untracked-files=${includeUntracked ? "all" : "no"}`],
    `cannot read the status of ${dir}`,
  );
  // Records are "XY <path>"; a rename adds the old path as an extra record, which is skipped.
  const files: { code: string; file: string }[] = [];
  const records = splitNul(out);
  for (let i = 0; i < records.length; i++) {
    const record = records[i] ?? "";
    files.push({ code: record.slice(0, 2), file: record.slice(3) });
    if (record[0] === "R" || record[0] === "C") i++;
  }
  return withStatus ? files : files.map(({ file }) => file);
}

// ---------------------------------------------------------------------------
// A merge the daemon did not live to finish

export type InterruptedMergeOutcome =
  /** The base already holds the branch's work: the merge got far enough. */
  | { settled: "merged"; commit: string }
  /** Nothing landed; a half-done merge of this branch in the base's checkout was aborted. */
  | { settled: "rolled_back"; aborted: boolean };

/**
 * Settles a worktree left `merging` by a daemon that died mid-merge. Only a half-done merge
 * of this very branch (MERGE_HEAD at its head) is aborted; anything else in the checkout is
 * the user's and stays. Temporary merge worktrees pu made are removed.
 */
export function settleInterruptedMerge(options: { projectRoot: string; branch: string; baseBranch: string; worktreesDir: string }): Promise<InterruptedMergeOutcome> {
  return withRepoLock(options.projectRoot, async () => {
    const { projectRoot, branch, baseBranch } = options;
    for (const wt of await listGitWorktreesLocked(projectRoot)) {
      if (path.dirname(path.resolve(wt.path)) === path.resolve(options.worktreesDir) && /^merge-[0-9a-f]{8}$/.test(path.basename(wt.path))) {
        await gitProbe(projectRoot, ["worktree", "remove", "--force", wt.path]);
      }
    }
    await gitProbe(projectRoot, ["worktree", "prune"]);
    const branchCommit = await revParse(projectRoot, `refs/heads/${branch}`);
    const baseCommit = await revParse(projectRoot, `refs/heads/${baseBranch}`);
    const checkout = await findCheckout(projectRoot, baseBranch);
    let aborted = false;
    if (checkout && branchCommit) {
      const mergeHead = (await gitProbe(checkout, ["rev-parse", "--verify", "--quiet", "MERGE_HEAD"])).stdout.trim();
      if (mergeHead === branchCommit) aborted = (await gitProbe(checkout, ["merge", "--abort"])).ok;
    }
    if (branchCommit && baseCommit && ((await isAncestor(projectRoot, branchCommit, baseCommit)) || (await mergeChangesNothing(projectRoot, baseCommit, branchCommit)))) {
      return { settled: "merged", commit: baseCommit };
    }
    return { settled: "rolled_back", aborted };
  });
}

export interface GitWorktree {
  path: string;
  /** Short branch name; null for a detached checkout. */
  branch: string | null;
}

/** Every checkout git knows for the repository, the main one first. */
export function listGitWorktrees(projectRoot: string): Promise<GitWorktree[]> {
  return withRepoLock(projectRoot, () => listGitWorktreesLocked(projectRoot));
}

async function listGitWorktreesLocked(projectRoot: string): Promise<GitWorktree[]> {
  const out = await gitOrFail(projectRoot, ["worktree", "list", "--porcelain", "-z"], "cannot list git worktrees");
  const worktrees: GitWorktree[] = [];
  for (const field of out.split("\0")) {
    if (field.startsWith("worktree ")) worktrees.push({ path: field.slice("worktree ".length), branch: null });
    else if (field.startsWith("branch refs/heads/")) {
      const last = worktrees[worktrees.length - 1];
      if (last) last.branch = field.slice("branch refs/heads/".length);
    }
  }
  return worktrees;
}

/** The directory where `branch` is checked out, if any worktree of the repository has it. */
async function findCheckout(projectRoot: string, branch: string): Promise<string | null> {
  const found = (await listGitWorktreesLocked(projectRoot)).find((wt) => wt.branch === branch && existsSync(wt.path));
  return found?.path ?? null;
}

interface MergeRequest {
  branch: string;
  baseBranch: string;
  strategy: MergeStrategy;
  message: string;
}

/** Merges in a checkout of the base; on failure the checkout is put back exactly as it was. */
async function mergeIn(dir: string, request: MergeRequest): Promise<MergeOutcome> {
  const { branch, baseBranch, strategy, message } = request;
  const before = await revParse(dir, "HEAD");
  try {
    if (strategy === "merge") {
      await git(dir, ["merge", "--no-ff", "--no-edit", "-m", message, "--end-of-options", branch]);
    } else if (strategy === "ff-only") {
      await git(dir, ["merge", "--ff-only", "--end-of-options", branch]);
    } else {
      await git(dir, ["merge", "--squash", "--end-of-options", branch]);
      const staged = await git(dir, ["diff", "--cached", "--name-only"]);
      if (staged.trim().length === 0) {
        // The branch's commits add up to nothing: there is no content to bring over.
        return { commit: before ?? "", alreadyUpToDate: true };
      }
      await git(dir, ["commit", "--no-edit", "-m", message]);
    }
  } catch (e) {
    const conflicts = splitNul((await gitProbe(dir, ["diff", "--name-only", "--diff-filter=U", "-z"])).stdout);
    await abortMerge(dir, strategy);
    if (conflicts.length > 0) throw new MergeConflictError(branch, baseBranch, conflicts);
    throw gitFailure(`merge of ${branch} into ${baseBranch} failed`, e);
  }
  const after = await revParse(dir, "HEAD");
  if (!after) throw new PuError("GIT_ERROR", `merge of ${branch} into ${baseBranch} left no HEAD in ${dir}`);
  return { commit: after, alreadyUpToDate: after === before };
}

async function abortMerge(dir: string, strategy: MergeStrategy): Promise<void> {
  const mergeHead = (await gitProbe(dir, ["rev-parse", "--verify", "--quiet", "MERGE_HEAD"])).stdout.trim();
  if (mergeHead) await gitProbe(dir, ["merge", "--abort"]);
  // A squash records no MERGE_HEAD; `reset --merge` undoes its index and file changes but keeps untracked files.
  else if (strategy === "squash") await gitProbe(dir, ["reset", "--merge"]);
}

/** Merges into a base branch nobody has checked out, in a throwaway detached worktree. */
async function mergeDetached(
  projectRoot: string,
  worktreesDir: string,
  request: MergeRequest & { baseCommit: string; branchCommit: string },
): Promise<MergeOutcome> {
  const { branch, baseBranch, baseCommit, branchCommit } = request;
  let newCommit: string;
  if (request.strategy === "ff-only") {
    newCommit = branchCommit;
  } else {
    await fs.mkdir(worktreesDir, { recursive: true });
    const tempPath = path.join(worktreesDir, `merge-${randomBytes(4).toString("hex")}`);
    try {
      await gitOrFail(projectRoot, ["worktree", "add", "--detach", tempPath, baseCommit], `cannot create a temporary worktree to merge ${branch}`);
      const outcome = await mergeIn(tempPath, request);
      if (outcome.alreadyUpToDate) return { commit: baseCommit, alreadyUpToDate: true };
      newCommit = outcome.commit;
    } finally {
      await gitProbe(projectRoot, ["worktree", "remove", "--force", tempPath]);
      await fs.rm(tempPath, { recursive: true, force: true });
      await gitProbe(projectRoot, ["worktree", "prune"]);
    }
  }
  // The old value guards against someone moving the base while we merged.
  await gitOrFail(
    projectRoot,
    ["update-ref", "-m", `pu: merge ${branch}`, `refs/heads/${baseBranch}`, newCommit, baseCommit],
    `cannot move ${baseBranch} to the merge result`,
    `${baseBranch} may have moved meanwhile; try the merge again`,
  );
  return { commit: newCommit, alreadyUpToDate: false };
}
