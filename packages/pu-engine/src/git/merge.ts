// Merging a worktree's branch into its base, and settling a merge a dead daemon left half done.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { PuError } from "@pu/core/errors";
import { findCheckout, git, gitFailure, gitOrFail, gitProbe, isAncestor, listGitWorktreesLocked, mergeChangesNothing, revParse, splitNul, uncommittedFiles, withRepoLock, summarize } from "./runner.js";
import { uncommittedWork } from "./worktree.js";

type MergeStrategy = "merge" | "squash" | "ff-only";

export interface MergeWorktreeOptions {
  projectRoot: string;
  /**
   * The checkout of the branch being merged, refused while it holds uncommitted work. Absent
   * for a branch pu holds no worktree of (a plan's integration branch): then any checkout of it
   * is found and checked the same way.
   */
  path?: string;
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
  const worktreePath = options.path ?? (await findCheckout(projectRoot, branch)) ?? undefined;
  const message = options.message ?? (strategy === "squash" ? `Squash ${branch}` : `Merge ${branch}`);

  if (worktreePath !== undefined && existsSync(worktreePath)) {
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
  return mergeDetached(projectRoot, options.worktreesDir ?? path.dirname(worktreePath ?? projectRoot), {
    branch,
    baseBranch,
    baseCommit,
    branchCommit,
    strategy,
    message,
  });
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
      else if (!mergeHead && (await holdsStagedMergeOf(checkout, branchCommit))) aborted = (await gitProbe(checkout, ["reset", "--merge"])).ok;
    }
    if (branchCommit && baseCommit && ((await isAncestor(projectRoot, branchCommit, baseCommit)) || (await mergeChangesNothing(projectRoot, baseCommit, branchCommit)))) {
      return { settled: "merged", commit: baseCommit };
    }
    return { settled: "rolled_back", aborted };
  });
}

/**
 * The checkout's index is exactly its HEAD merged with `branchCommit`, and differs from HEAD: a
 * merge git had staged but not recorded. git writes MERGE_HEAD last, after its message, so a git
 * killed by the daemon's death (or by the broken pipe of its stderr) leaves this instead; a squash
 * never writes one. Any other staged change is the person's and is not touched.
 */
async function holdsStagedMergeOf(checkout: string, branchCommit: string): Promise<boolean> {
  const index = await gitProbe(checkout, ["write-tree"]); // fails on unmerged entries
  const head = await gitProbe(checkout, ["rev-parse", "HEAD^{tree}"]);
  if (!index.ok || !head.ok || index.stdout.trim() === head.stdout.trim()) return false;
  const merged = await gitProbe(checkout, ["merge-tree", "--write-tree", "HEAD", branchCommit]);
  return merged.ok && merged.stdout.split("\n")[0]?.trim() === index.stdout.trim();
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
