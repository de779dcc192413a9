// One isolated world per test file: a temp PU_HOME, a temp git repository, and the real
// `pu` binary run as a child process against the daemon it auto-starts. The sandbox
// remembers every pid it sees (daemon pid file, agent pids in status reports, pu
// children it started) so teardown can prove nothing is left running.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isProcessAlive, waitFor } from "./wait-for.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, "../..");
export const PU_BIN = path.join(REPO_ROOT, "packages/pu-cli/bin/pu");
export const FAKE_AGENT = path.join(REPO_ROOT, "packages/pu-engine/test/fixtures/fake-agent.mjs");
/** `--command` value that runs the scripted fake agent (plain words, so no shell in between). */
export const FAKE_AGENT_COMMAND = `${process.execPath} ${FAKE_AGENT}`;

export interface PuRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  /** Added to (or, with `undefined`, removed from) the sandbox environment. */
  env?: Record<string, string | undefined>;
  /** Written to the command's standard input (otherwise stdin is /dev/null). */
  input?: string;
  /** When a hung command is killed (default 90 s). */
  timeoutMs?: number;
}

/** A `pu` process left running (logs --follow, attach without a terminal). */
export interface RunningPu {
  child: ChildProcess;
  output(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The agent fields the tests read from `status --json` (the full shape is checked with zod). */
export interface AgentJson {
  id: string;
  name: string;
  agentType: string;
  status: string;
  pid?: number;
  exitCode?: number;
  suspended?: boolean;
  live: boolean;
  idleSeconds: number | null;
  storedStatus: string;
  waitingReason?: string;
  worktreeId?: string;
  [key: string]: unknown;
}
export interface WorktreeJson {
  id: string;
  name: string;
  path: string;
  branch: string;
  status: string;
  agents: Record<string, AgentJson>;
  [key: string]: unknown;
}
export interface StatusJson {
  projectRoot: string;
  worktrees: Record<string, WorktreeJson>;
  agents: Record<string, AgentJson>;
  createdAt: string;
  updatedAt: string;
}

// Git run by the tests, by the daemon and by agents ignores the user's config and has an identity.
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "pu e2e",
  GIT_AUTHOR_EMAIL: "pu-e2e@example.invalid",
  GIT_COMMITTER_NAME: "pu e2e",
  GIT_COMMITTER_EMAIL: "pu-e2e@example.invalid",
};

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined when gone. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function remember(pids: Map<number, string>, pid: number): void {
  if (pids.has(pid)) return;
  const startTime = processStartTime(pid);
  // Already gone when first seen: nothing to verify later, and the pid may be reused.
  if (startTime !== undefined) pids.set(pid, startTime);
}

export function allAgents(report: StatusJson): AgentJson[] {
  return [...Object.values(report.agents), ...Object.values(report.worktrees).flatMap((wt) => Object.values(wt.agents))];
}

export class PuSandbox {
  /** Temp directory holding everything below; removed by teardown. */
  readonly base: string;
  readonly home: string;
  /** The project: a git repository on `main` with one commit (README.md). */
  readonly root: string;
  /** pid → its start time (from /proc), so a pid reused by an unrelated process is never touched. */
  readonly daemonPids = new Map<number, string>();
  readonly agentPids = new Map<number, string>();
  private readonly children = new Set<ChildProcess>();

  constructor(prefix = "pu-e2e-") {
    this.base = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
    this.home = path.join(this.base, "home");
    this.root = path.join(this.base, "project");
    mkdirSync(this.root);
    this.git(["init", "-q", "-b", "main"]);
    this.commitFiles({ "README.md": "hello\n" }, "initial commit");
  }

  /** The environment every pu process (and so the daemon and its agents) gets. */
  env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, ...GIT_ENV, PU_HOME: this.home, SHELL: "/bin/sh", NO_COLOR: "1" };
    // A test run from inside a pu agent must not act as that agent or on its project.
    delete env.PU_AGENT_ID;
    delete env.PU_PROJECT_ROOT;
    delete env.PU_WORKTREE_ID;
    for (const [key, value] of Object.entries(extra)) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
    return env;
  }

  git(args: string[], cwd = this.root): string {
    return execFileSync("git", args, { cwd, env: this.env(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trimEnd();
  }

  commitFiles(files: Record<string, string>, message: string, cwd = this.root): string {
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(cwd, file)), { recursive: true });
      writeFileSync(path.join(cwd, file), content);
    }
    this.git(["add", "--", ...Object.keys(files)], cwd);
    this.git(["commit", "-q", "-m", message], cwd);
    return this.git(["rev-parse", "HEAD"], cwd);
  }

  /** Runs `pu ARGS` to completion (cwd: the project root unless given). */
  pu(args: string[], { cwd = this.root, env, input, timeoutMs = 90_000 }: RunOptions = {}): Promise<PuRun> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [PU_BIN, ...args], { cwd, env: this.env(env), stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
      if (input !== undefined) child.stdin?.end(input);
      this.children.add(child);
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
      child.stderr?.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
      // A hung command must fail its test, not the whole run.
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        this.children.delete(child);
        this.noteDaemonPid();
        resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr });
      });
    });
  }

  /** Runs `pu ARGS`, expects exit 0 (the error names the command and its stderr) and returns stdout. */
  async ok(args: string[], options?: RunOptions): Promise<string> {
    const run = await this.pu(args, options);
    if (run.code !== 0) throw new Error(`pu ${args.join(" ")} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}${this.daemonLogTail(run)}`);
    return run.stdout;
  }

  /** Runs `pu ARGS --json`, expects exit 0 and returns the parsed document. */
  async puJson<T = unknown>(args: string[], options?: RunOptions): Promise<T> {
    // Before any `--`: what follows it is passed through to the agent.
    const dashDash = args.indexOf("--");
    const withJson = dashDash < 0 ? [...args, "--json"] : [...args.slice(0, dashDash), "--json", ...args.slice(dashDash)];
    const run = await this.pu(withJson, options);
    if (run.code !== 0) {
      throw new Error(`pu ${args.join(" ")} --json exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}${this.daemonLogTail(run)}`);
    }
    const doc = JSON.parse(run.stdout) as T;
    this.notePids(doc);
    return doc;
  }

  /** When the daemon could not be reached (exit 4), the end of its log says why. */
  private daemonLogTail(run: PuRun): string {
    if (run.code !== 4) return "";
    try {
      return `\n--- end of ${path.join(this.home, "daemon.log")} ---\n${readFileSync(path.join(this.home, "daemon.log"), "utf8").slice(-3000)}`;
    } catch {
      return " (no daemon.log)";
    }
  }

  /** `pu status --json`, remembering every agent pid it reports. */
  status(options?: RunOptions): Promise<StatusJson> {
    return this.puJson<StatusJson>(["status"], options);
  }

  async agent(agentId: string): Promise<AgentJson> {
    const found = allAgents(await this.status()).find((a) => a.id === agentId);
    if (!found) throw new Error(`agent ${agentId} is not in pu status`);
    return found;
  }

  /** Spawns with `--json` and returns the agent id (and worktree id, if any). */
  async spawnAgent(args: string[]): Promise<{ agentId: string; worktreeId?: string; worktreePath?: string; cwd: string }> {
    const result = await this.puJson<{ agentId: string; worktreeId?: string; worktreePath?: string; cwd: string }>(["spawn", ...args]);
    return result;
  }

  /** `pu logs ID` as text. */
  async logs(agentId: string): Promise<string> {
    const run = await this.pu(["logs", agentId]);
    if (run.code !== 0) throw new Error(`pu logs ${agentId} exited ${run.code}: ${run.stderr.trim()}`);
    return run.stdout;
  }

  /** Waits until the agent's logs contain `text` (or match it); returns the logs. */
  waitForLogs(agentId: string, text: string | RegExp, timeoutMs = 30_000): Promise<string> {
    return waitFor(
      `${JSON.stringify(String(text))} in the logs of ${agentId}`,
      async () => {
        const out = await this.logs(agentId);
        return (typeof text === "string" ? out.includes(text) : text.test(out)) ? out : undefined;
      },
      timeoutMs,
      250,
    );
  }

  /** Waits until the agent's live status satisfies `check`; returns it. */
  waitForAgent(agentId: string, what: string, check: (a: AgentJson) => boolean, timeoutMs = 30_000): Promise<AgentJson> {
    return waitFor(
      `${agentId} ${what}`,
      async () => {
        const a = await this.agent(agentId);
        return check(a) ? a : undefined;
      },
      timeoutMs,
      250,
    );
  }

  /** Starts `pu ARGS` and leaves it running (its stdin is /dev/null, so it has no terminal). */
  startPu(args: string[], { cwd = this.root, env }: RunOptions = {}): RunningPu {
    const child = spawn(process.execPath, [PU_BIN, ...args], { cwd, env: this.env(env), stdio: ["ignore", "pipe", "pipe"] });
    this.children.add(child);
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString("utf8")));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString("utf8")));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("close", (code, signal) => {
        this.children.delete(child);
        resolve({ code, signal });
      }),
    );
    return { child, output: () => out, stderr: () => err, exited };
  }

  /** Remembers a child started elsewhere (a PTY-driven `pu attach`) so teardown stops it. */
  trackPid(pid: number): void {
    remember(this.agentPids, pid);
  }

  /** The pid in `$PU_HOME/daemon.pid`, remembered for teardown. */
  /** SIGKILLs the running daemon (by its recorded pid) and waits until it is gone: a crash mid-operation. */
  async sigkillDaemon(): Promise<void> {
    const pid = this.noteDaemonPid();
    if (pid === undefined) throw new Error(`no daemon pid in ${this.home}`);
    process.kill(pid, "SIGKILL");
    await waitFor("the daemon to be gone", () => !isProcessAlive(pid));
  }

  noteDaemonPid(): number | undefined {
    try {
      const pid = Number.parseInt(readFileSync(path.join(this.home, "daemon.pid"), "utf8").trim(), 10);
      if (Number.isInteger(pid) && pid > 1) {
        remember(this.daemonPids, pid);
        return pid;
      }
    } catch {
      // no daemon yet
    }
    return undefined;
  }

  /** Every `pid` / `agentPid` found anywhere in a JSON document (status, spawn, play results). */
  notePids(doc: unknown): void {
    const visit = (value: unknown, key?: string): void => {
      if (Array.isArray(value)) value.forEach((v) => visit(v));
      else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) visit(v, k);
      else if (typeof value === "number" && (key === "pid" || key === "agentPid") && value > 1) remember(this.agentPids, value);
    };
    visit(doc);
  }

  /**
   * `pu daemon stop`, then checks by pid that the daemon and every agent are gone. Leftovers
   * are killed (by pid and process group, never by name) and returned, so the caller fails.
   */
  async teardown(): Promise<string[]> {
    const leftovers: string[] = [];
    for (const child of this.children) child.kill("SIGKILL");
    if (existsSync(this.home)) {
      const stop = await this.pu(["daemon", "stop"]);
      if (stop.code !== 0) leftovers.push(`pu daemon stop exited ${stop.code}: ${stop.stderr.trim()}`);
    }
    const tracked = [...this.daemonPids, ...this.agentPids].filter(([pid]) => pid !== process.pid);
    const stillOurs = ([pid, startTime]: [number, string]) => isProcessAlive(pid) && processStartTime(pid) === startTime;
    // An agent's last child may take a moment to be reaped after the daemon is gone.
    await waitFor("every process to be gone", () => !tracked.some(stillOurs), 10_000).catch(() => undefined);
    for (const entry of tracked) {
      if (!stillOurs(entry)) continue;
      const [pid] = entry;
      leftovers.push(`pid ${pid} (${this.daemonPids.has(pid) ? "daemon" : "agent"}) still running after pu daemon stop`);
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, "SIGKILL");
        } catch {
          // gone, or not a group leader
        }
      }
    }
    rmSync(this.base, { recursive: true, force: true });
    return leftovers;
  }
}
