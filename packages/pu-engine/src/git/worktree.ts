// Creating, checking and removing pu's worktrees.
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { PuError } from "@pu/core/errors";
import { branchExists, currentBranch, gitOrFail, gitProbe, isInside, mergeChangesNothing, realpathOrNull, revParse, uncommittedFiles, withRepoLock, summarize } from "./runner.js";

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

/**
 * The commit a `--base` names; INVALID_ARGUMENT when it names no branch or commit of the
 * project. Asked up front by whatever creates worktrees later (a group's members).
 */
export async function requireBaseRef(projectRoot: string, base: string): Promise<string> {
  if (base.startsWith("-")) throw new PuError("INVALID_ARGUMENT", `base ref "${base}" is not a branch or commit; pass one to --base`);
  const commit = await revParse(projectRoot, base);
  if (!commit) throw new PuError("INVALID_ARGUMENT", `base ref "${base}" does not exist in ${projectRoot}; pass an existing branch or commit to --base`);
  return commit;
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
  const baseCommit = options.base !== undefined ? await requireBaseRef(projectRoot, options.base) : await revParse(projectRoot, base);
  if (!baseCommit) {
    throw new PuError("INVALID_STATE", `${projectRoot} has no commits on ${base} yet; make a first commit before creating worktrees`);
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
export async function uncommittedWork(worktreePath: string, ignoreUntracked: string[]): Promise<string[]> {
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
    // pu's worktrees are all inside its own directory. A path elsewhere (a manifest pu did not
    // write, or edited by hand) may be the person's own worktree: `remove --force` would
    // discard its uncommitted work, so pu does not touch it, through git or by hand.
    const realDir = await realpathOrNull(worktreesDir);
    const realPath = await realpathOrNull(worktreePath);
    if (realDir === null || realPath === null || !isInside(realDir, realPath)) {
      throw new PuError("GIT_ERROR", `worktree ${worktreePath} is outside ${worktreesDir}, so pu will not delete it; remove it yourself`);
    }
    const removal = await gitProbe(projectRoot, ["worktree", "remove", "--force", worktreePath]);
    if (removal.ok) {
      removedPath = true;
    } else {
      // git refuses unregistered or locked worktrees; inside pu's own directory they are pu's to delete.
      await gitProbe(projectRoot, ["worktree", "unlock", worktreePath]);
      await fs.rm(realPath, { recursive: true, force: true });
      removedPath = true;
      notes.push(`git could not remove the worktree (${removal.error?.message ?? "unknown error"}); deleted ${worktreePath} directly`);
    }
  }
  await gitProbe(projectRoot, ["worktree", "prune"]);

  let deletedBranch = false;
  if (deleteBranch) {
    if (!branch.startsWith("pu/")) {
      // Every branch pu makes is pu/<name>; any other (main, the person's own) is never pu's to delete.
      notes.push(`kept branch ${branch}: pu deletes only the branches it made (pu/…)`);
    } else if (!(await branchExists(projectRoot, branch))) {
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

