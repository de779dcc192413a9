// A temp PU_HOME and a temp git repository initialized with the real `pu init`, which
// starts a real daemon through the CLI's own auto-start. `stop()` ends that daemon (by
// the pid it recorded) and removes everything.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PU_BIN, type PuRun } from "./run-pu.js";

export interface CliProject {
  dir: string;
  home: string;
  repo: string;
  /** Runs `pu ARGS` in the repository. */
  pu: (...args: string[]) => Promise<PuRun>;
  /** Runs `pu ARGS` with a cwd, extra environment and stdin text of the caller's choosing. */
  run: (args: string[], opts?: { cwd?: string; env?: Record<string, string>; input?: string }) => Promise<PuRun>;
  stop: () => Promise<void>;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The real bin as a child process; stdin gets `input` (or is closed at once, as git hooks do). */
export function runPuWith(args: string[], { cwd, env, input }: { cwd: string; env: Record<string, string>; input?: string }): Promise<PuRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PU_BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input ?? "");
  });
}

function daemonPid(home: string): number | undefined {
  try {
    const m = /\d+/.exec(readFileSync(path.join(home, "daemon.pid"), "utf8"));
    return m ? Number(m[0]) : undefined;
  } catch {
    return undefined;
  }
}

export async function startCliProject(prefix: string): Promise<CliProject> {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  const home = path.join(dir, "home");
  const repo = path.join(dir, "repo");
  execFileSync("git", ["init", "-q", "-b", "main", repo]);
  git(repo, "commit", "-q", "--allow-empty", "-m", "init");
  const run: CliProject["run"] = (args, opts = {}) =>
    runPuWith(args, { cwd: opts.cwd ?? repo, env: { PU_HOME: home, ...opts.env }, ...(opts.input !== undefined ? { input: opts.input } : {}) });
  const project: CliProject = {
    dir,
    home,
    repo,
    run,
    pu: (...args) => run(args),
    stop: async () => {
      const pid = daemonPid(home);
      if (pid !== undefined && alive(pid)) {
        // A graceful stop also ends the agents the daemon started.
        await run(["daemon", "stop"]).catch(() => undefined);
        if (alive(pid)) process.kill(pid, "SIGKILL");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const init = await project.pu("init");
  if (init.code !== 0) {
    await project.stop();
    throw new Error(`pu init failed: ${init.stderr}`);
  }
  return project;
}
