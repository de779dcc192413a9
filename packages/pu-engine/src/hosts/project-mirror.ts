// A project's mirror on a host, seen from the control plane: made and given the base branch
// (git's own protocol over the host's transport), the project's env files read to be sent with
// a spawn, a worktree's branch fetched back and merged here, and what a worktree there holds
// that this machine lacks.
// Paths and names reach the host as arguments, never as shell text.
import { readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { loadConfig } from "@pu/core/config";
import { PuError, isPuError } from "@pu/core/errors";
import type { HostRecord } from "@pu/core/hosts-file";
import { KeyedTurns } from "@pu/core/keyed-turns";
import type { RemoteProject } from "@pu/core/remote-projects-file";
import type { MergeResult, WorktreeView } from "@pu/ipc/protocol";
import { mergeWorktree } from "../git/merge.js";
import { git, isAncestor, isInside, realpathOrNull, revParse } from "../git/runner.js";
import { fetchRefs, pushRefs } from "../git/transfer.js";
import type { HostLinks } from "./host-links.js";
import { lastLine, run } from "./run-command.js";

const MIRROR_TIMEOUT_MS = 60_000;
const WORKTREE_STATUS_TIMEOUT_MS = 6000;
/** What one env file may weigh to be sent to a host (they are secrets and settings, not data). */
const MAX_ENV_FILE_BYTES = 1024 * 1024;

/**
 * Makes the mirror on the host ($1, base branch $2): a repository whose checked-out base a push
 * updates in place (the host daemon makes worktrees from it). Fixed text; paths arrive as arguments.
 */
const MIRROR_SCRIPT = [
  "set -e",
  'mkdir -p "$1"',
  'cd "$1"',
  'if [ ! -d .git ]; then git init -q -b "$2"; fi',
  "git config receive.denyCurrentBranch updateInstead",
  // The env files pu writes into the host's worktrees ($3…) are never the agent's work: ignored there.
  "shift 2",
  "mkdir -p .git/info",
  'for f in "$@"; do grep -qxF -- "/$f" .git/info/exclude 2>/dev/null || printf "/%s\\n" "$f" >> .git/info/exclude; done',
].join("\n");

/** The promise, or DAEMON_UNAVAILABLE once `ms` have passed (the work itself goes on; its result is dropped). */
export function withDeadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PuError("DAEMON_UNAVAILABLE", message)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

async function envFilesOf(projectRoot: string): Promise<string[]> {
  return (await loadConfig(projectRoot)).envFiles.map((f) => path.posix.normalize(f));
}

/**
 * The host's daemon applies its own trust to the mirror's `.pu/`: its refusal is said as the
 * host's, with how to review and give that trust from here. Any other error as it is.
 */
export function hostTrustError(hostName: string, error: unknown): unknown {
  if (!isPuError(error) || error.code !== "UNTRUSTED") return error;
  return new PuError("UNTRUSTED", `on host ${hostName}: ${error.message.replace(/; read it, then run `pu trust` in .* to allow it$/, "")}; review it with \`pu trust --on ${hostName} --show\`, then \`pu trust --on ${hostName}\``);
}

// Two pushes into one mirror at once (two plan workers or group members placed on a host
// together) race for its refs and its checked-out tree, and one of them fails: they take turns.
const mirrorTurns = new KeyedTurns();

/**
 * Makes the mirror if needed and pushes the base branch to it (forced: the mirror follows this
 * machine), one push into a host's mirror at a time.
 */
export function pushBase(links: HostLinks, host: HostRecord, projectRoot: string, mirror: string, baseBranch: string): Promise<void> {
  return mirrorTurns.run(`${host.name}\0${mirror}`, () => pushBaseNow(links, host, projectRoot, mirror, baseBranch));
}

async function pushBaseNow(links: HostLinks, host: HostRecord, projectRoot: string, mirror: string, baseBranch: string): Promise<void> {
  await links.freshen(host);
  const envFiles = (await envFilesOf(projectRoot)).filter((f) => !f.startsWith("../") && !f.includes("\n"));
  const made = await run(links.argv(host, ["sh", "-c", MIRROR_SCRIPT, "sh", mirror, baseBranch, ...envFiles]), MIRROR_TIMEOUT_MS);
  if (made.code !== 0) throw new PuError("DAEMON_UNAVAILABLE", `cannot prepare the mirror ${mirror} on ${host.name}: ${lastLine(made.stderr) || `exit ${made.code}`}`);
  try {
    await pushRefs(projectRoot, links.gitUrl(host, "receive-pack", mirror), [`+refs/heads/${baseBranch}:refs/heads/${baseBranch}`]);
  } catch (error) {
    throw new PuError("GIT_ERROR", `cannot push ${baseBranch} to ${host.name}: ${(error as Error).message}`);
  }
}

/** A worktree's branch fetched back into this repository; never forced over a local branch of that name that went its own way. */
export async function fetchBranchBack(links: HostLinks, host: HostRecord, projectRoot: string, mirror: string, branch: string): Promise<void> {
  refuseOtherThanPuBranch(host.name, branch);
  try {
    await fetchRefs(projectRoot, links.gitUrl(host, "upload-pack", mirror), [`refs/heads/${branch}:refs/heads/${branch}`]);
  } catch (error) {
    throw new PuError("GIT_ERROR", `cannot fetch ${branch} back from ${host.name}: ${(error as Error).message}`);
  }
}

/**
 * A branch name a host reports is fetched into, and deleted from, this repository: only a pu
 * branch (pu/<name>, a plain ref name) may be. A host's manifest is written by its daemon, but
 * anything running there as the person (an agent, say) can edit it; it must not be able to move
 * or delete main here.
 */
function refuseOtherThanPuBranch(host: string, branch: string): void {
  if (/^pu\/[A-Za-z0-9._\/-]+$/.test(branch) && !branch.includes("..") && !branch.includes("//") && !branch.endsWith(".lock") && !branch.endsWith("/")) return;
  throw new PuError("GIT_ERROR", `host ${host} reported branch ${JSON.stringify(branch)} for a pu worktree, which is not a pu branch (pu/…); pu will not fetch or delete it here`);
}

/** Files a host's worktree holds uncommitted, as its git says: pu's own files and the env files pu wrote there left out. */
async function uncommittedOnHost(links: HostLinks, host: HostRecord, worktreePath: string, projectRoot: string): Promise<string[]> {
  const status = await run(links.argv(host, ["git", "-C", worktreePath, "status", "--porcelain", "--untracked-files=normal"]), WORKTREE_STATUS_TIMEOUT_MS);
  if (status.code !== 0) throw new PuError("DAEMON_UNAVAILABLE", `cannot read ${worktreePath} on ${host.name}: ${lastLine(status.stderr) || `exit ${status.code}`}`);
  const envFiles = new Set(await envFilesOf(projectRoot).catch(() => [] as string[]));
  return status.stdout
    .split("\n")
    .filter((line) => line.length > 3)
    .map((line) => line.slice(3))
    .filter((file) => !file.startsWith(".pu/") && !envFiles.has(file));
}

/**
 * The project's env files (config `envFiles`) as they are here: regular files inside the project,
 * read to be written into the host's new worktree. What cannot be sent is said, not guessed.
 */
export async function readEnvFiles(projectRoot: string): Promise<{ files: { path: string; data: Uint8Array }[]; notes: string[] }> {
  const files: { path: string; data: Uint8Array }[] = [];
  const notes: string[] = [];
  for (const relative of (await loadConfig(projectRoot)).envFiles) {
    const source = path.resolve(projectRoot, relative);
    const real = await realpathOrNull(source);
    if (!isInside(projectRoot, source) || (real !== null && !isInside(await realpath(projectRoot), real))) {
      throw new PuError("INVALID_ARGUMENT", `env file "${relative}" is outside the project root ${projectRoot}; list envFiles relative to the project root`);
    }
    if (real === null) {
      notes.push(`env file ${relative} not found in the project root; not sent to the host`);
      continue;
    }
    const info = await stat(real);
    if (!info.isFile() || info.size > MAX_ENV_FILE_BYTES) {
      notes.push(`env file ${relative} is ${info.isFile() ? "over 1 MiB" : "not a regular file"}; not sent to the host`);
      continue;
    }
    files.push({ path: path.relative(projectRoot, source).split(path.sep).join("/"), data: await readFile(real) });
  }
  return { files, notes };
}

type Placement = Pick<RemoteProject, "host" | "projectRoot" | "baseBranch">;

/**
 * The branch a host worktree was made from (a plan worker's: the plan's branch), which its work
 * merges into here; the placement's last base only for a worktree an older host did not record it for.
 */
function baseOf(project: Placement, worktree: WorktreeView): string {
  return worktree.baseBranch ?? project.baseBranch;
}

/**
 * A host worktree's branch, fetched back, merged into the local base as any local worktree's —
 * refused while the worktree holds uncommitted files there, nothing to merge when the base has it.
 */
export async function mergeFetchedBack(links: HostLinks, host: HostRecord, project: Placement & { merged: string[] }, worktree: WorktreeView, strategy: "merge" | "squash" | "ff-only", message: string | undefined): Promise<MergeResult> {
  const dirty = await uncommittedOnHost(links, host, worktree.path, project.projectRoot);
  if (dirty.length > 0) {
    throw new PuError("INVALID_STATE", `worktree ${worktree.id} on ${host.name} has uncommitted changes (${dirty.slice(0, 5).join(", ")}); commit them in the worktree first`);
  }
  const baseBranch = baseOf(project, worktree);
  const base = { worktreeId: worktree.id, strategy, baseBranch };
  const branchCommit = await revParse(project.projectRoot, `refs/heads/${worktree.branch}`);
  const baseCommit = await revParse(project.projectRoot, `refs/heads/${baseBranch}`);
  if (branchCommit && baseCommit && (await isAncestor(project.projectRoot, branchCommit, baseCommit)) && !project.merged.includes(worktree.id)) {
    return { ...base, status: worktree.status, nothingToMerge: true };
  }
  const outcome = await mergeWorktree({ projectRoot: project.projectRoot, branch: worktree.branch, baseBranch, strategy, ...(message ? { message } : {}) });
  return { ...base, status: "merged", commit: outcome.commit };
}

/** What a host worktree holds that this machine's base lacks (uncommitted files there, commits not merged here); undefined: nothing. */
export async function workNotHere(links: HostLinks, host: HostRecord, project: Placement, worktree: WorktreeView): Promise<{ reason: string; uncommittedFiles: string[]; unmergedCommits: number } | undefined> {
  const baseBranch = baseOf(project, worktree);
  const branchCommit = await revParse(project.projectRoot, `refs/heads/${worktree.branch}`);
  const dirty = await uncommittedOnHost(links, host, worktree.path, project.projectRoot);
  const unmerged = branchCommit ? Number((await git(project.projectRoot, ["rev-list", "--count", `refs/heads/${baseBranch}..${branchCommit}`])).trim()) : 0;
  if (dirty.length === 0 && unmerged === 0) return undefined;
  const what = [dirty.length > 0 ? `${dirty.length} uncommitted file(s)` : "", unmerged > 0 ? `${unmerged} commit(s) ${baseBranch} lacks` : ""].filter(Boolean).join(", ");
  return { reason: `on host ${project.host}: ${what} (pu merge ${worktree.id} first, or --force)`, uncommittedFiles: dirty, unmergedCommits: unmerged };
}

/** The local copy of a removed host worktree's branch goes once nothing on it is lost. */
export async function dropMergedBranch(project: Placement, worktree: WorktreeView): Promise<void> {
  refuseOtherThanPuBranch(project.host, worktree.branch);
  const branchCommit = await revParse(project.projectRoot, `refs/heads/${worktree.branch}`);
  if (branchCommit && (await isAncestor(project.projectRoot, branchCommit, `refs/heads/${baseOf(project, worktree)}`).catch(() => false))) {
    await git(project.projectRoot, ["branch", "-D", worktree.branch]).catch(() => undefined);
  }
}
