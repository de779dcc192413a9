// Git-hook gates: triggers with `on: pre_commit` / `pre_push` run when a commit or push
// happens in one of pu's worktrees.
//
// Installation, kept away from the user's own checkout: every worktree pu creates gets
// a per-worktree `core.hooksPath` (`git config --worktree`, which needs
// `extensions.worktreeConfig` in the repository) pointing at `<root>/.pu/hooks/`. The
// main checkout's config is not touched beyond that extension flag, so its commits run
// exactly the hooks they ran before. The scripts there run `pu gate <event>` only when
// the repository is inside `<root>/.pu/worktrees/` and a trigger file mentions the
// event, then chain to the hook the worktree would otherwise run (the repository's or
// the user's global `core.hooksPath`, else `<git-common-dir>/hooks/<name>`).
// Hooks are installed for every new worktree (not only when such a trigger exists), so
// a trigger added later applies to worktrees that already exist.
//
// The scripts call the pu CLI by absolute path: `PU_CLI_BIN` (set by the CLI when it
// starts the daemon), else the CLI package next to this one in the pu checkout. When
// neither exists, a hook that has gates to run fails the commit and says why: a gate
// that cannot run must not pass.
import { promises as fs } from "node:fs";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import { puDir, worktreesDir } from "@pu/core/paths";
import { shellQuote } from "@pu/core/template";
import type { DaemonLog } from "../daemon-log.js";
import { locatePuCli } from "../pu-cli-path.js";
import { git, gitProbe, isInside, withRepoLock } from "./runner.js";

/** What installing hooks needs of the daemon: the home its scripts name, and its log. */
export interface HookDeps {
  home: string;
  log: DaemonLog;
}

export type HookEvent = "pre_commit" | "pre_push";
const HOOK_FILES: Record<HookEvent, string> = { pre_commit: "pre-commit", pre_push: "pre-push" };

function hooksDir(root: string): string {
  return path.join(puDir(root), "hooks");
}

function hookScript(opts: {
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
# The hooks this worktree would run without pu: the repository's (or the user's global)
# core.hooksPath, else <git-common-dir>/hooks.
common_dir=$(git rev-parse --git-common-dir 2>/dev/null) || exit 0
case "$common_dir" in /*) ;; *) common_dir="$top/$common_dir" ;; esac
user_hooks=$(git config --file "$common_dir/config" --get core.hooksPath 2>/dev/null) ||
  user_hooks=$(git config --global --get core.hooksPath 2>/dev/null) ||
  user_hooks="$common_dir/hooks"
case "$user_hooks" in /*) ;; *) user_hooks="$top/$user_hooks" ;; esac
if [ "$user_hooks" != ${q(opts.hooksDir)} ] && [ -x "$user_hooks/${name}" ]; then exec "$user_hooks/${name}" "$@"; fi
exit 0
`;
}

/**
 * Points a new pu worktree at pu's hook scripts (rewritten each time, so they name the
 * current CLI). Returns notes for the spawn's warnings; never throws.
 */
export async function installWorktreeHooks(deps: HookDeps, root: string, worktreePath: string): Promise<string[]> {
  const { home, log } = deps;
  const realWorktree = await fs.realpath(worktreePath).catch(() => worktreePath);
  if (!isInside(worktreesDir(root), realWorktree) && !isInside(worktreesDir(root), worktreePath)) {
    return [`${worktreePath} is not under ${worktreesDir(root)}; pu's git hooks were not installed there`];
  }
  const cli = locatePuCli();
  try {
    const dir = hooksDir(root);
    await fs.mkdir(dir, { recursive: true });
    for (const event of Object.keys(HOOK_FILES) as HookEvent[]) {
      const file = path.join(dir, HOOK_FILES[event]);
      // Unique temp names: two spawns installing hooks at once must not trip over each other.
      await writeFileAtomic(file, hookScript({ root, home, event, node: process.execPath, cli, hooksDir: dir }), { mode: 0o755, fsync: true });
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
