// Shared plumbing for the benchmarks: temp workspaces, a daemon per benchmark,
// a pid registry so nothing we start outlives the run, and the statistics.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ENGINE_BIN = path.join(REPO, "packages/pu-engine/bin/pu-engine");
export const CLI_BIN = path.join(REPO, "packages/pu-cli/bin/pu");

/** The built packages, loaded by path: the workspace root does not depend on them. */
export async function loadClient() {
  return import(pathToFileURL(path.join(REPO, "packages/pu-ipc/dist/client.js")).href);
}
export async function loadManifestStore() {
  return import(pathToFileURL(path.join(REPO, "packages/pu-core/dist/manifest-store.js")).href);
}
export function loadPty() {
  return createRequire(path.join(REPO, "packages/pu-engine/package.json"))("node-pty");
}

/** A delay for Promise.race that does not keep the process alive once the race is over. */
export function unrefDelay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// ---- processes we own ----

/** pid → kill the whole process group (PTY children lead their own group) or just the pid. */
const owned = new Map();

export function own(pid, { group = false } = {}) {
  if (pid) owned.set(pid, group);
  return pid;
}
export function disown(pid) {
  owned.delete(pid);
}

export function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

function signal(pid, group, sig) {
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    // already gone
  }
  if (group) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/** Kills one owned process (and its group if it leads one) and forgets it. */
export async function killOwned(pid, { graceMs = 2000 } = {}) {
  const group = owned.get(pid) ?? false;
  signal(pid, group, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(20);
  if (isAlive(pid)) signal(pid, group, "SIGKILL");
  owned.delete(pid);
}

/** Synchronous last resort (process 'exit'): SIGKILL everything still registered. */
export function killAllOwnedSync() {
  for (const [pid, group] of owned) signal(pid, group, "SIGKILL");
  owned.clear();
}

export async function killAllOwned() {
  await Promise.all([...owned.keys()].map((pid) => killOwned(pid)));
}

// ---- temp workspaces ----

const tempDirs = new Set();

/** Synchronous last resort (process 'exit', signals): kill what we own, remove our temp dirs. */
export function cleanupAllSync() {
  killAllOwnedSync();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function git(cwd, ...args) {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/** A temp dir with its own PU_HOME and a git repository holding one commit. */
export async function tempWorkspace(label) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `pu-bench-${label}-`));
  tempDirs.add(dir);
  const home = path.join(dir, "home");
  const project = path.join(dir, "project");
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(project);
  git(project, "init", "-q", "-b", "main");
  git(project, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "--allow-empty", "-m", "init");
  return {
    dir,
    home,
    project,
    env: { ...process.env, PU_HOME: home, GIT_AUTHOR_NAME: "bench", GIT_AUTHOR_EMAIL: "bench@example.invalid", GIT_COMMITTER_NAME: "bench", GIT_COMMITTER_EMAIL: "bench@example.invalid" },
    cleanup: async () => {
      await rm(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    },
  };
}

// ---- the daemon ----

export async function connect(home, clientName = "pu-bench") {
  const { connectClient } = await loadClient();
  return connectClient({ socketPath: path.join(home, "daemon.sock"), clientName, timeoutMs: 60_000 });
}

/** Waits until something answers hello at home's socket; returns the connected client. */
export async function waitForDaemon(home, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < deadline) {
    try {
      return await connect(home);
    } catch (err) {
      lastError = err;
      await sleep(25);
    }
  }
  throw new Error(`daemon in ${home} did not answer within ${timeoutMs} ms: ${lastError?.message}`);
}

/**
 * Starts `pu-engine --home DIR` as our child (`extraNodeArgs` after pu's own Node flags: a later
 * V8 flag wins, so a bench can take one of pu's back). `stop()` asks it to shut down (it
 * stops its agents), and kills it by pid if it does not go.
 */
export async function startDaemon(home, env = process.env, extraNodeArgs = []) {
  const errFile = path.join(home, "bench-daemon.stderr");
  const fd = openSync(errFile, "a");
  let child;
  try {
    // Started as `pu` starts it (its Node flags), plus PU_BENCH_DAEMON_NODE_ARGS: e.g.
    // "--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the daemon.
    const { DAEMON_NODE_FLAGS } = await import(pathToFileURL(path.join(REPO, "packages/pu-core/dist/daemon-process.js")).href);
    const nodeArgs = [...DAEMON_NODE_FLAGS, ...(process.env.PU_BENCH_DAEMON_NODE_ARGS ?? "").split(" ").filter(Boolean), ...extraNodeArgs];
    child = spawn(process.execPath, [...nodeArgs, ENGINE_BIN, "--home", home], { stdio: ["ignore", fd, fd], env: { ...env, PU_HOME: home } });
  } finally {
    closeSync(fd);
  }
  own(child.pid);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let client;
  try {
    client = await Promise.race([
      waitForDaemon(home),
      exited.then((code) => {
        throw new Error(`pu-engine exited with ${code} on start: ${readFileSync(errFile, "utf8").slice(-500)}`);
      }),
    ]);
  } catch (err) {
    await killOwned(child.pid);
    throw err;
  }
  return {
    pid: child.pid,
    client,
    async stop() {
      try {
        await client.request("shutdown", {}, { timeoutMs: 5000 });
      } catch {
        // not answering: killed below
      }
      client.close();
      await Promise.race([exited, unrefDelay(20_000)]);
      if (isAlive(child.pid)) await killOwned(child.pid);
      disown(child.pid);
    },
  };
}

/** A daemon started by someone else (the CLI): stop it via its pid file. */
export async function stopDaemonByPidFile(home) {
  const pidFile = path.join(home, "daemon.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt(readFileSync(pidFile, "utf8"), 10);
  if (!Number.isInteger(pid) || pid <= 0) return;
  own(pid);
  try {
    const client = await connect(home);
    await client.request("shutdown", {}, { timeoutMs: 5000 }).catch(() => undefined);
    client.close();
  } catch {
    // not answering
  }
  const deadline = Date.now() + 20_000;
  while (isAlive(pid) && Date.now() < deadline) await sleep(20);
  if (isAlive(pid)) await killOwned(pid);
  disown(pid);
}

/** Spawns an agent through the daemon and registers its process group as ours. */
export async function spawnAgent(client, fields) {
  const result = await client.request("spawn", fields);
  own(result.agent.pid, { group: true });
  return result;
}

/**
 * Runs `argv` (a program and its arguments) to its end and times it, as a whole process; a
 * non-zero exit is an error naming the command.
 */
export function timeProcess(argv, { cwd, env } = {}) {
  const start = performance.now();
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - start;
  if (r.status !== 0) throw new Error(`${argv.join(" ")} exited with ${r.status}: ${(r.stderr ?? "").slice(0, 500)}`);
  return { ms, stdout: r.stdout };
}

// ---- /proc ----

const CLOCK_TICKS = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** utime + stime of a process, in seconds. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds the whole machine spent busy (all cores: user, nice, system, irq, softirq, steal) since boot. */
export function machineBusySeconds() {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS;
}

export function rssBytes(pid) {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}

// ---- statistics ----

export function percentile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** Median and spread of a list of samples. */
export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n === 0 ? NaN : n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return { median, min: sorted[0], max: sorted[n - 1], n, samples };
}

/**
 * One row of the results table. `higherIsBetter` decides the ratio's direction:
 * ratio = value / reference either way; `target` is checked against it by `met`.
 */
export function figure({ id, name, unit, value, reference, ratio, target, met, notes }) {
  return { id, name, unit, value, reference: reference ?? null, ratio: ratio ?? null, target: target ?? null, met: met ?? null, notes: notes ?? null };
}

export function now() {
  return performance.now();
}

export { sleep };

/** Resolves the promise registered for a key once that key shows up in the output. */
export function echoWaiter() {
  let waiting;
  return {
    expect(key) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no echo of ${JSON.stringify(key)} within 10 s`)), 10_000);
        waiting = { key, resolve: () => (clearTimeout(timer), resolve()) };
      });
    },
    seen(data) {
      if (waiting && data.includes(waiting.key)) {
        const w = waiting;
        waiting = undefined;
        w.resolve();
      }
    },
  };
}
