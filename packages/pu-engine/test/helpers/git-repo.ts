// Real git repositories in temp dirs for tests. Git is run directly (not through the
// code under test) so a test's setup and its assertions do not share the code's bugs.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface TempRepo {
  /** Real path of the repository's top level (temp dirs may sit behind symlinks). */
  root: string;
  /** Runs git in the repository (or in `cwd`) and returns stdout without the trailing newline; throws on failure. */
  git(args: string[], cwd?: string): string;
  /** Writes a file (creating directories) relative to the root, or to `cwd` when given. */
  write(relativePath: string, content: string | Uint8Array, cwd?: string): void;
  /** Writes files and commits them; returns the new commit. */
  commit(files: Record<string, string>, message: string, cwd?: string): string;
  head(cwd?: string): string;
  cleanup(): void;
}

// Keep the user's global and system config (signing, hooks paths, default branch) out of tests.
const isolatedEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
};

export function runGit(cwd: string, args: string[]): string {
  return execFileSync("git", args, { cwd, env: isolatedEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trimEnd();
}

/** A fresh repository on branch `main` with one commit (README.md), identity and no signing. */
export function makeTempRepo(prefix = "pu-git-"): TempRepo {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  const root = path.join(base, "project");
  mkdirSync(root);
  runGit(root, ["init", "-q", "-b", "main"]);
  runGit(root, ["config", "user.name", "pu test"]);
  runGit(root, ["config", "user.email", "pu-test@example.invalid"]);
  runGit(root, ["config", "commit.gpgsign", "false"]);

  const repo: TempRepo = {
    root,
    git: (args, cwd = root) => runGit(cwd, args),
    write(relativePath, content, cwd = root) {
      const file = path.join(cwd, relativePath);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
    },
    commit(files, message, cwd = root) {
      for (const [file, content] of Object.entries(files)) repo.write(file, content, cwd);
      runGit(cwd, ["add", "--", ...Object.keys(files)]);
      runGit(cwd, ["commit", "-q", "-m", message]);
      return runGit(cwd, ["rev-parse", "HEAD"]);
    },
    head: (cwd = root) => runGit(cwd, ["rev-parse", "HEAD"]),
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
  repo.commit({ "README.md": "hello\n" }, "initial commit");
  return repo;
}

/**
 * Makes git run by the code under test (simple-git inherits process.env) ignore the
 * user's global and system config too. Returns a function that restores the environment.
 */
export function isolateGitConfig(): () => void {
  const keys = ["GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TERMINAL_PROMPT"] as const;
  const saved = keys.map((k) => [k, process.env[k]] as const);
  for (const k of keys) process.env[k] = isolatedEnv[k];
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
