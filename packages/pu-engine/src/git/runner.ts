// Running git for the daemon: one runner (simple-git, made to reject on any non-zero exit),
// the per-repository lock, and the repository facts the other git modules ask.
// All functions take absolute paths and throw PuError with a code the CLI can act on.
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Mutex } from "async-mutex";
import { GitError, simpleGit, type SimpleGit } from "simple-git";
import { PuError } from "@pu/core/errors";

// ---------------------------------------------------------------------------
// Running git

/** A git command that exited non-zero; kept internal, callers see PuError. */
// Extends GitError because simple-git wraps any other error type and loses the exit code.
export class GitCommandError extends GitError {
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
export function gitAt(dir: string, extraEnv?: Record<string, string>): SimpleGit {
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
    unsafe: { allowUnsafeConfigPaths: true, allowUnsafeConfigEnvCount: true, allowUnsafeHooksPath: true },
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

export async function git(dir: string, args: string[], env?: Record<string, string>): Promise<string> {
  if (!existsSync(dir)) {
    throw new PuError("GIT_ERROR", `cannot run git in ${dir}: the directory does not exist`);
  }
  return gitAt(dir, env).raw(args);
}

/** Runs git and reports failure as a value, for probes where a non-zero exit is an answer. */
export async function gitProbe(dir: string, args: string[]): Promise<{ ok: boolean; stdout: string; error?: GitCommandError }> {
  try {
    return { ok: true, stdout: await git(dir, args) };
  } catch (e) {
    if (e instanceof GitCommandError) return { ok: false, stdout: e.stdout, error: e };
    throw e;
  }
}

export function gitFailure(what: string, e: unknown, fix?: string): PuError {
  if (e instanceof PuError) return e;
  const reason = e instanceof Error ? e.message : String(e);
  return new PuError("GIT_ERROR", `${what}: ${reason}${fix ? `; ${fix}` : ""}`, { cause: e });
}

export async function gitOrFail(dir: string, args: string[], what: string, fix?: string): Promise<string> {
  try {
    return await git(dir, args);
  } catch (e) {
    throw gitFailure(what, e, fix);
  }
}

export function splitNul(text: string): string[] {
  return text.split("\0").filter((s) => s.length > 0);
}

export async function revParse(dir: string, ref: string): Promise<string | null> {
  const r = await gitProbe(dir, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]);
  const sha = r.stdout.trim();
  return r.ok && sha ? sha : null;
}

export async function branchExists(dir: string, branch: string): Promise<boolean> {
  const r = await gitProbe(dir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]);
  return r.ok && r.stdout.trim().length > 0;
}

export async function isAncestor(dir: string, ancestor: string, descendant: string): Promise<boolean> {
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

export async function realpathOrNull(p: string): Promise<string | null> {
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

export async function uncommittedFiles(dir: string, options: { includeUntracked: boolean; withStatus?: false }): Promise<string[]>;
export async function uncommittedFiles(
  dir: string,
  options: { includeUntracked: boolean; withStatus: true },
): Promise<{ code: string; file: string }[]>;
export async function uncommittedFiles(
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

export interface GitWorktree {
  path: string;
  /** Short branch name; null for a detached checkout. */
  branch: string | null;
}

/** Every checkout git knows for the repository, the main one first. */
export function listGitWorktrees(projectRoot: string): Promise<GitWorktree[]> {
  return withRepoLock(projectRoot, () => listGitWorktreesLocked(projectRoot));
}

export async function listGitWorktreesLocked(projectRoot: string): Promise<GitWorktree[]> {
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
export async function findCheckout(projectRoot: string, branch: string): Promise<string | null> {
  const found = (await listGitWorktreesLocked(projectRoot)).find((wt) => wt.branch === branch && existsSync(wt.path));
  return found?.path ?? null;
}

export async function mergeChangesNothing(dir: string, baseCommit: string, branchCommit: string): Promise<boolean> {
  const merged = await gitProbe(dir, ["merge-tree", "--write-tree", baseCommit, branchCommit]);
  if (!merged.ok) return false;
  const baseTree = await gitProbe(dir, ["rev-parse", `${baseCommit}^{tree}`]);
  return baseTree.ok && merged.stdout.split("\n")[0]?.trim() === baseTree.stdout.trim();
}

/** One clause naming what would be lost, e.g. "2 uncommitted files (a.ts, b.ts) and 3 unmerged commits". */

/** A few file names for a message, "and N more" for the rest. */
export function summarize(files: string[], limit = 5): string {
  const shown = files.slice(0, limit).join(", ");
  return files.length > limit ? `${shown} and ${files.length - limit} more` : shown;
}
