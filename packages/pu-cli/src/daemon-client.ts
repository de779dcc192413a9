import { closeSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DAEMON_NODE_FLAGS } from "@pu/core/daemon-process";
import { isPuError, PuError } from "@pu/core/errors";
import { ensurePuHome, logPath, pidPath, puHome, socketPath } from "@pu/core/paths";
import { connectClient, type Client } from "@pu/ipc/client";

const CLIENT_NAME = "pu-cli";
const START_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 5_000;

export interface DaemonConnectOptions {
  home?: string;
  /** Start the daemon when nothing answers (default true). */
  autoStart?: boolean;
}

export function daemonHome(env: NodeJS.ProcessEnv = process.env): string {
  return puHome(env);
}

function withRestartHint(error: unknown): unknown {
  if (isPuError(error) && error.code === "PROTOCOL_MISMATCH" && !error.message.includes("pu daemon restart")) {
    return new PuError("PROTOCOL_MISMATCH", `${error.message}; run \`pu daemon restart\``, { cause: error });
  }
  return error;
}

/** Connects to a running daemon; undefined when none is listening. */
export async function tryConnectDaemon(home: string = daemonHome()): Promise<Client | undefined> {
  try {
    return await connectClient({ socketPath: socketPath(home), clientName: CLIENT_NAME, timeoutMs: CONNECT_TIMEOUT_MS });
  } catch (error) {
    // A daemon that answered "full" is there: waiting for it to start would only hide why.
    if (isPuError(error) && error.code === "DAEMON_UNAVAILABLE" && error.details?.maxConnections === undefined) return undefined;
    throw withRestartHint(error);
  }
}

// A connection opened while the command's modules are still loading (see `prewarmConnection`).
let prewarmed: { home: string; client: Promise<Client | undefined> } | undefined;

/**
 * Starts connecting to an already running daemon (never starts one) so the socket handshake
 * overlaps module loading. The next `connectDaemon` for the same home takes it over;
 * `releasePrewarmed` closes it when the command never asked for it.
 */
export function prewarmConnection(home: string = daemonHome()): void {
  prewarmed = { home, client: tryConnectDaemon(home).catch(() => undefined) };
}

/** @public cli.ts calls it on the dynamically imported module, which knip cannot trace. */
export async function releasePrewarmed(): Promise<void> {
  const pending = prewarmed;
  prewarmed = undefined;
  (await pending?.client)?.close();
}

async function takePrewarmed(home: string): Promise<Client | undefined> {
  if (prewarmed?.home !== home) return undefined;
  const pending = prewarmed;
  prewarmed = undefined;
  return pending.client;
}

/** Connects to the daemon, starting it first when it is not running (unless autoStart is false). */
export async function connectDaemon({ home = daemonHome(), autoStart = true }: DaemonConnectOptions = {}): Promise<Client> {
  const client = (await takePrewarmed(home)) ?? (await tryConnectDaemon(home));
  if (client) return client;
  if (!autoStart) throw new PuError("DAEMON_UNAVAILABLE", "pu daemon is not running; start it with `pu daemon start`");
  await startDaemonProcess(home);
  return waitForDaemon(home, START_TIMEOUT_MS);
}

/** Runs `fn` with a connected client and always closes the connection afterwards. */
export async function withDaemon<T>(fn: (client: Client) => Promise<T>, options?: DaemonConnectOptions): Promise<T> {
  const client = await connectDaemon(options);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/** The `pu-engine` bin next to the `@pu/engine` package's daemon entry; the CLI never imports engine code. */
function daemonBinPath(): string {
  const daemonEntry = fileURLToPath(import.meta.resolve("@pu/engine/daemon"));
  return path.join(path.dirname(daemonEntry), "..", "bin", "pu-engine");
}

/** This CLI's own `bin/pu`, next to the `dist/` this module runs from. */
export function cliBinPath(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "bin", "pu");
}

/** Starts the daemon detached from this process, appending its output to `$PU_HOME/daemon.log`. */
export async function startDaemonProcess(home: string): Promise<number | undefined> {
  ensurePuHome(home);
  // Loaded here, not at the top: only the first command after boot pays for child_process.
  const { spawn } = await import("node:child_process");
  const log = openSync(logPath(home), "a", 0o600);
  try {
    const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, daemonBinPath(), "--home", home], {
      detached: true,
      stdio: ["ignore", log, log],
      // The git hooks the daemon installs in worktrees call back into this CLI (`pu gate`).
      env: { ...process.env, PU_HOME: home, PU_CLI_BIN: cliBinPath() },
    });
    // A failed exec surfaces as an "error" event; without a listener it would crash the CLI.
    child.on("error", () => {});
    child.unref();
    return child.pid;
  } finally {
    closeSync(log);
  }
}

// Polled this often while the daemon starts: a connect attempt to a missing socket costs well
// under a millisecond, and doubling waits used to find a daemon ready at 400 ms only at ~775 ms.
const START_POLL_MS = 25;
// Recovery (stopping agents no manifest records, which may ignore SIGTERM) runs before the
// daemon listens and can hold the socket back for up to ~7 s: a daemon whose pid file names a
// live process is given this long before the CLI gives up on it.
const RECOVERING_TIMEOUT_MS = 15_000;

/**
 * Polls until the daemon answers. Gives up after `timeoutMs`, or after `recoveringTimeoutMs`
 * (the longer one) while `$PU_HOME/daemon.pid` names a live process still getting ready.
 */
export async function waitForDaemon(
  home: string,
  timeoutMs: number,
  recoveringTimeoutMs: number = Math.max(timeoutMs, RECOVERING_TIMEOUT_MS),
): Promise<Client> {
  const started = Date.now();
  let startingPid: number | undefined;
  for (;;) {
    const client = await tryConnectDaemon(home);
    if (client) return client;
    const waited = Date.now() - started;
    if (waited + START_POLL_MS > timeoutMs) {
      startingPid = livingDaemonPid(home);
      if (startingPid === undefined || waited + START_POLL_MS > recoveringTimeoutMs) break;
    }
    await new Promise((resolve) => setTimeout(resolve, START_POLL_MS));
  }
  if (startingPid !== undefined) {
    throw new PuError(
      "DAEMON_UNAVAILABLE",
      `pu daemon (pid ${startingPid}) is running but did not answer within ${Math.round(recoveringTimeoutMs / 1000)}s ` +
        `(it may still be recovering projects); see ${logPath(home)}`,
    );
  }
  throw new PuError(
    "DAEMON_UNAVAILABLE",
    `pu daemon did not start within ${Math.round(timeoutMs / 1000)}s; see ${logPath(home)}`,
  );
}

function livingDaemonPid(home: string): number | undefined {
  const pid = readDaemonPid(home);
  return pid !== undefined && isProcessAlive(pid) ? pid : undefined;
}

/** The pid recorded in `$PU_HOME/daemon.pid`, whatever shape the daemon wrote it in. */
export function readDaemonPid(home: string = daemonHome()): number | undefined {
  let text: string;
  try {
    text = readFileSync(pidPath(home), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "number") return parsed;
    if (parsed && typeof parsed === "object" && typeof (parsed as { pid?: unknown }).pid === "number") {
      return (parsed as { pid: number }).pid;
    }
  } catch {
    // not JSON: fall through to the first integer in the file
  }
  const m = /\d+/.exec(text);
  return m ? Number(m[0]) : undefined;
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Waits until `pid` is gone; false when it is still alive after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isProcessAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
