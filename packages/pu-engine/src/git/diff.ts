// What a worktree changed against its base.
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { PuError } from "@pu/core/errors";
import type { DiffFile, WorktreeDiff } from "@pu/ipc/protocol";
import { gitAt, gitFailure, gitOrFail, splitNul } from "./runner.js";

export interface DiffWorktreeOptions {
  path: string;
  branch: string;
  baseBranch: string;
  stat?: boolean;
  /** The project's env files pu copied into the worktree: never the agent's change (their contents are secrets). */
  envFiles?: readonly string[];
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
    if (existsSync(realIndex)) {
      await fs.copyFile(realIndex, indexFile);
      // The copy keeps the index's own time: git takes an entry whose file changed in the same
      // second the index was written ("racily clean") as possibly changed only by comparing that
      // time; a fresh copy's later time made a same-size edit in that second look unchanged.
      const { atime, mtime } = await fs.stat(realIndex);
      await fs.utimes(indexFile, atime, mtime);
    }
    const env = { GIT_INDEX_FILE: indexFile };
    // Entries ending in "/" are nested repositories, which have no lines to count.
    const copied = new Set((options.envFiles ?? []).map((f) => path.posix.normalize(f)));
    const untracked = splitNul(await diffGit(worktreePath, ["ls-files", "--others", "--exclude-standard", "-z"], env))
      .filter((p) => !p.endsWith("/") && !copied.has(p));
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

