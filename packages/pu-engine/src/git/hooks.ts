// Git-hook gates: triggers with `on: pre_commit` / `pre_push` run when a commit or push
// happens in one of pu's worktrees.
//
// Installation, kept away from the user's own checkout: every worktree pu creates gets
// a per-worktree `core.hooksPath` (`git config --worktree`, which needs
// `extensions.worktreeConfig` in the repository) pointing at the project's hooks folder in
// the pu home, `$PU_HOME/hooks/<folder>-<hash>/` (`projectHooksDir`). Git runs every hook in
// the folder a worktree points at, so that folder must be one pu writes entirely and no
// repository can reach: an earlier pu pointed at `<root>/.pu/hooks/`, and a cloned
// repository that committed `.pu/hooks/post-commit` had it run by the first commit in any pu
// worktree, untrusted. The main checkout's config is not touched beyond that extension flag,
// so its commits run exactly the hooks they ran before.
//
// The folder holds pu's `pre-commit` and `pre-push`, and a stub for each other hook the
// person has (every hook name git knows is looked at when a worktree is made). The two run
// `pu gate <event>` only when the repository is inside `<root>/.pu/worktrees/` and a trigger
// file mentions the event; every script then chains (by `exec`, so a hook reading stdin
// still gets it) to the hook the worktree would otherwise run: the repository's or the
// user's global `core.hooksPath`, else `<git-common-dir>/hooks/<name>`. Without those
// stubs the person's own post-commit or commit-msg hooks would not run in pu's worktrees.
// Hooks are installed for every new worktree (not only when such a trigger exists), so
// a trigger added later applies to worktrees that already exist. A worktree an earlier pu
// pointed at `<root>/.pu/hooks/` is re-pointed when the daemon next starts
// (`repointLegacyHooks`); the files in that folder are left alone.
//
// The scripts call the pu CLI by absolute path: `PU_CLI_BIN` (set by the CLI when it
// starts the daemon), else the CLI package next to this one in the pu checkout. When
// neither exists, a hook that has gates to run fails the commit and says why: a gate
// that cannot run must not pass.
import { constants as fsConstants, promises as fs } from "node:fs";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import { projectHooksDir, puDir, worktreesDir } from "@pu/core/paths";
import { shellQuote } from "@pu/core/template";
import type { DaemonLog } from "../daemon-log.js";
import { locatePuCli } from "../pu-cli-path.js";
import { git, gitProbe, isInside, listGitWorktrees, withRepoLock } from "./runner.js";

/** What installing hooks needs of the daemon: the home its scripts name, and its log. */
export interface HookDeps {
  home: string;
  log: DaemonLog;
}

export type HookEvent = "pre_commit" | "pre_push";
const HOOK_FILES: Record<HookEvent, string> = { pre_commit: "pre-commit", pre_push: "pre-push" };

/**
 * Every other hook git runs from a hooks folder (`git help hooks`), each only chaining to
 * the person's own. Left out: `push-to-checkout`, whose mere presence replaces git's own
 * update of a pushed-to checkout, so a stub with nothing to chain to would change what a
 * push does.
 */
const CHAINED_HOOKS = [
  "applypatch-msg",
  "pre-applypatch",
  "post-applypatch",
  "pre-merge-commit",
  "prepare-commit-msg",
  "commit-msg",
  "post-commit",
  "pre-rebase",
  "post-checkout",
  "post-merge",
  "pre-receive",
  "update",
  "proc-receive",
  "post-receive",
  "post-update",
  "reference-transaction",
  "pre-auto-gc",
  "post-rewrite",
  "sendemail-validate",
  "fsmonitor-watchman",
  "p4-changelist",
  "p4-prepare-changelist",
  "p4-post-changelist",
  "p4-pre-submit",
  "post-index-change",
] as const;

/** Where pu pointed its worktrees before the hooks moved to the home: inside the repository. */
function legacyHooksDir(root: string): string {
  return path.join(puDir(root), "hooks");
}

/** The tail of every script: hand over to the hook this worktree would run without pu. */
function chainToUserHook(name: string, hooksDir: string): string {
  const q = shellQuote;
  return `# The hooks this worktree would run without pu: the repository's (or the user's global)
# core.hooksPath, else <git-common-dir>/hooks. exec, so a hook reading stdin still gets it.
common_dir=$(git rev-parse --git-common-dir 2>/dev/null) || exit 0
case "$common_dir" in /*) ;; *) common_dir="$top/$common_dir" ;; esac
user_hooks=$(git config --file "$common_dir/config" --get core.hooksPath 2>/dev/null) ||
  user_hooks=$(git config --global --get core.hooksPath 2>/dev/null) ||
  user_hooks="$common_dir/hooks"
case "$user_hooks" in /*) ;; *) user_hooks="$top/$user_hooks" ;; esac
if [ "$user_hooks" != ${q(hooksDir)} ] && [ -x "$user_hooks/${name}" ]; then exec "$user_hooks/${name}" "$@"; fi
exit 0
`;
}

function gateScript(opts: {
  root: string;
  home: string;
  event: HookEvent;
  node: string;
  cli: string | undefined;
  hooksDir: string;
}): string {
  const name = HOOK_FILES[opts.event];
  const q = shellQuote;
  const run = opts.cli
    ? `PU_HOME=${q(opts.home)} PU_PROJECT_ROOT="$pu_root" ${q(opts.node)} ${q(opts.cli)} gate ${name} </dev/null || exit 1`
    : `echo "pu: cannot run the ${opts.event} gates: the pu CLI was not found when this hook was written; restart the daemon with \\\`pu daemon restart\\\`" >&2; exit 1`;
  return `#!/bin/sh
# Written by pu for its own worktrees (per-worktree core.hooksPath); pu rewrites it.
# Runs pu's ${opts.event} gates inside ${opts.root}/.pu/worktrees/, then the repository's own ${name} hook.
pu_root=${q(opts.root)}
top=$(git rev-parse --show-toplevel 2>/dev/null) || top=$(pwd -P)
case "$top/" in
  "$pu_root/.pu/worktrees/"*)
    if grep -qs -e ${q(opts.event)} "$pu_root"/.pu/triggers/*.yaml ${q(opts.home)}/triggers/*.yaml; then
      ${run}
    fi
    ;;
esac
${chainToUserHook(name, opts.hooksDir)}`;
}

function chainScript(name: string, hooksDir: string): string {
  return `#!/bin/sh
# Written by pu for its own worktrees (per-worktree core.hooksPath); pu rewrites it.
# pu has nothing to do on ${name}: it only runs the repository's own ${name} hook.
top=$(git rev-parse --show-toplevel 2>/dev/null) || top=$(pwd -P)
${chainToUserHook(name, hooksDir)}`;
}

/** The folder whose hooks a checkout of the project runs without pu (the rule the scripts follow). */
async function personHooksDir(root: string): Promise<string> {
  const configured = (await gitProbe(root, ["config", "--type=path", "--get", "core.hooksPath"])).stdout.trim();
  if (configured) return path.resolve(root, configured);
  const common = (await gitProbe(root, ["rev-parse", "--git-common-dir"])).stdout.trim();
  return path.join(path.resolve(root, common || ".git"), "hooks");
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    await fs.access(file, fsConstants.X_OK);
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

/** Writes a script unless it already says exactly that: a spawn rewrites only what changed. */
async function writeScript(file: string, text: string): Promise<void> {
  const current = await fs.readFile(file, "utf8").catch(() => undefined);
  const mode = current === undefined ? undefined : (await fs.stat(file)).mode & 0o777;
  if (current === text && mode === 0o755) return;
  // Unique temp names: two spawns installing hooks at once must not trip over each other.
  await writeFileAtomic(file, text, { mode: 0o755, fsync: true });
}

/**
 * Points a new pu worktree at pu's hook scripts (rewritten when they changed, so they name
 * the current CLI). Returns notes for the spawn's warnings; never throws.
 */
export async function installWorktreeHooks(deps: HookDeps, root: string, worktreePath: string): Promise<string[]> {
  const { home, log } = deps;
  const realWorktree = await fs.realpath(worktreePath).catch(() => worktreePath);
  if (!isInside(worktreesDir(root), realWorktree) && !isInside(worktreesDir(root), worktreePath)) {
    return [`${worktreePath} is not under ${worktreesDir(root)}; pu's git hooks were not installed there`];
  }
  const cli = locatePuCli();
  try {
    const dir = projectHooksDir(home, root);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    for (const event of Object.keys(HOOK_FILES) as HookEvent[]) {
      await writeScript(path.join(dir, HOOK_FILES[event]), gateScript({ root, home, event, node: process.execPath, cli, hooksDir: dir }));
    }
    // A stub only where the person has a hook to chain to: each one git finds it runs (a commit
    // runs five or so), and a stub with nothing behind it would only cost the commit time.
    // One the person adds later gets its stub at the next spawn in the project.
    const theirs = await personHooksDir(root);
    for (const name of CHAINED_HOOKS) {
      const stub = path.join(dir, name);
      if (await isExecutableFile(path.join(theirs, name))) await writeScript(stub, chainScript(name, dir));
      else await fs.rm(stub, { force: true });
    }
    await withRepoLock(root, async () => {
      const flag = (await gitProbe(root, ["config", "--local", "--get", "extensions.worktreeConfig"])).stdout.trim();
      if (flag !== "true") await git(root, ["config", "--local", "extensions.worktreeConfig", "true"]);
      await git(worktreePath, ["config", "--worktree", "core.hooksPath", dir]);
    });
  } catch (err) {
    log.event("hooks_install_failed", { projectRoot: root, worktreePath, error: err });
    return [`pu's git hooks were not installed in ${worktreePath}: ${(err as Error).message}; pre_commit/pre_push gates will not run there`];
  }
  return cli ? [] : [`the pu CLI was not found (PU_CLI_BIN unset): commits in ${worktreePath} fail while pre_commit/pre_push triggers exist`];
}

/**
 * Re-points the project's worktrees that an earlier pu left on `<root>/.pu/hooks/` (a folder
 * the repository itself can fill) at pu's own hooks folder. Run when the daemon starts; a
 * worktree pointed anywhere else is left as it is. Never throws: what fails is logged.
 */
export async function repointLegacyHooks(deps: HookDeps, root: string): Promise<void> {
  const legacy = legacyHooksDir(root);
  const legacyReal = await fs.realpath(legacy).catch(() => legacy);
  const wtDir = worktreesDir(root);
  const wtDirReal = await fs.realpath(wtDir).catch(() => wtDir);
  let worktrees;
  try {
    worktrees = await listGitWorktrees(root);
  } catch (err) {
    deps.log.event("hooks_repoint_failed", { projectRoot: root, error: err });
    return;
  }
  for (const wt of worktrees) {
    if (!isInside(wtDir, wt.path) && !isInside(wtDirReal, wt.path)) continue;
    try {
      const current = (await gitProbe(wt.path, ["config", "--worktree", "--get", "core.hooksPath"])).stdout.trim();
      if (current !== legacy && current !== legacyReal) continue;
      const notes = await installWorktreeHooks(deps, root, wt.path);
      deps.log.event("hooks_repointed", { projectRoot: root, worktreePath: wt.path, from: current, notes });
    } catch (err) {
      // A worktree whose directory is gone (prunable) has nothing to re-point.
      deps.log.event("hooks_repoint_failed", { projectRoot: root, worktreePath: wt.path, error: err });
    }
  }
}
