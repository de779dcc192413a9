// A project's mirror on a host, seen from the control plane: made and given the base branch
// (git's own protocol over the host's transport), the project's env files read to be sent with
// a spawn, a worktree's branch fetched back, and what a worktree there holds uncommitted.
// Paths and names reach the host as arguments, never as shell text.
import { readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import type { HostRecord } from "@pu/core/hosts-file";
import { isInside, realpathOrNull } from "../git/runner.js";
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

/** Makes the mirror if needed and pushes the base branch to it (forced: the mirror follows this machine). */
export async function pushBase(links: HostLinks, host: HostRecord, projectRoot: string, mirror: string, baseBranch: string): Promise<void> {
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
  try {
    await fetchRefs(projectRoot, links.gitUrl(host, "upload-pack", mirror), [`refs/heads/${branch}:refs/heads/${branch}`]);
  } catch (error) {
    throw new PuError("GIT_ERROR", `cannot fetch ${branch} back from ${host.name}: ${(error as Error).message}`);
  }
}

/** Files a host's worktree holds uncommitted, as its git says: pu's own files and the env files pu wrote there left out. */
export async function uncommittedOnHost(links: HostLinks, host: HostRecord, worktreePath: string, projectRoot: string): Promise<string[]> {
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
