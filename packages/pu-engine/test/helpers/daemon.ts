// Runs the real daemon (bin/pu-engine, built dist) as a child process in a temp PU_HOME,
// connects real clients to it, and tears every process it knows of down afterwards.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { DAEMON_NODE_FLAGS } from "@pu/core/daemon-process";
import type { AgentEntry, Manifest } from "@pu/core/manifest";
import { connectClient, type Client } from "@pu/ipc/client";
import type { EventFrame } from "@pu/ipc/protocol";
import { makeTempRepo, type TempRepo } from "./git-repo.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const DAEMON_BIN = path.resolve(here, "../../bin/pu-engine");
export const FAKE_AGENT = path.resolve(here, "../fixtures/fake-agent.mjs");
/** A `command` that runs the scripted fake agent (no shell syntax, so no shell in between). */
export const FAKE_AGENT_COMMAND = `${process.execPath} ${FAKE_AGENT}`;

export interface TestDaemon {
  home: string;
  proc: ChildProcess;
  pid: number;
  socketPath: string;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  client(name?: string): Promise<Client>;
  /** SIGTERM and wait (the daemon's graceful shutdown). */
  stop(): Promise<void>;
  /** SIGKILL: the daemon dies without cleaning up, as in a crash. */
  crash(): Promise<void>;
}

const daemons = new Set<TestDaemon>();
const agentPids = new Set<number>();
const tempDirs = new Set<string>();

/** Environment shared by the daemon and the agents it starts: isolated git, a plain shell. */
export function daemonEnv(home: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PU_HOME: home,
    SHELL: "/bin/sh",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "pu test",
    GIT_AUTHOR_EMAIL: "pu-test@example.invalid",
    GIT_COMMITTER_NAME: "pu test",
    GIT_COMMITTER_EMAIL: "pu-test@example.invalid",
  };
}

export function makeTempHome(): string {
  const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-home-")));
  tempDirs.add(home);
  return home;
}

export function trackTempDir(dir: string): void {
  tempDirs.add(dir);
}

/** Remember an agent pid so cleanup can make sure it is gone. */
export function trackAgentPid(pid: number | undefined): void {
  if (typeof pid === "number" && pid > 1) agentPids.add(pid);
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
    }
    await sleep(everyMs);
  }
}

/** Starts bin/pu-engine for `home` (with the Node flags `pu` starts it with) and waits until it answers a hello. */
export async function startTestDaemon(home: string = makeTempHome(), extraArgs: string[] = ["--home", home]): Promise<TestDaemon> {
  const proc = spawn(process.execPath, [...DAEMON_NODE_FLAGS, DAEMON_BIN, ...extraArgs], {
    env: daemonEnv(home),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  const socketPath = path.join(home, "daemon.sock");
  const clients: Client[] = [];

  const daemon: TestDaemon = {
    home,
    proc,
    pid: proc.pid ?? -1,
    socketPath,
    exited,
    stderr: () => stderr,
    async client(name = "test") {
      const client = await connectClient({ socketPath, clientName: name, timeoutMs: 30_000 });
      clients.push(client);
      return client;
    },
    async stop() {
      for (const c of clients) c.close();
      if (!ended) proc.kill("SIGTERM");
      const outcome = await Promise.race([exited, sleep(20_000).then(() => null)]);
      if (outcome === null) {
        proc.kill("SIGKILL");
        await exited;
      }
      daemons.delete(daemon);
    },
    async crash() {
      for (const c of clients) c.close();
      if (!ended) proc.kill("SIGKILL");
      await exited;
      daemons.delete(daemon);
    },
  };
  daemons.add(daemon);
  await waitFor(
    "the daemon to accept connections",
    async () => {
      if (ended) throw new Error(`daemon exited early: ${stderr.trim()}`);
      if (!existsSync(socketPath)) return false;
      const probe = await connectClient({ socketPath, clientName: "probe", timeoutMs: 2000 });
      probe.close();
      return true;
    },
    30_000,
  );
  return daemon;
}

/** Stops every daemon, kills every agent pid still alive (by pid), removes temp dirs. */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...daemons].map((d) => d.stop()));
  for (const pid of agentPids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  agentPids.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** Pulls a stream's events into an array in the background, so tests can wait on them. */
export function collectEvents(stream: AsyncIterable<EventFrame>): { events: EventFrame[]; done: Promise<void> } {
  const events: EventFrame[] = [];
  const done = (async () => {
    try {
      for await (const event of stream) events.push(event);
    } catch {
      // the connection ended; what arrived is kept
    }
  })();
  return { events, done };
}

/** All `output` bytes of an attach stream, in order. */
export function outputBytes(events: EventFrame[]): Buffer {
  return Buffer.concat(events.flatMap((e) => (e.type === "output" ? [Buffer.from(e.data)] : [])));
}

/** A git repository, initialized as a pu project through the daemon, with optional config. */
export async function makeProject(client: Client, configYaml?: string): Promise<TempRepo> {
  const repo = makeTempRepo();
  trackTempDir(path.dirname(repo.root));
  await client.request("init", { projectRoot: repo.root });
  if (configYaml !== undefined) {
    writeFileSync(path.join(repo.root, ".pu", "config.yaml"), configYaml);
    await trustProject(client, repo.root);
  }
  return repo;
}

/** `pu trust`: what a person does once after writing `.pu/` files that run commands by hand. */
export async function trustProject(client: Client, root: string): Promise<void> {
  await client.request("trust", { projectRoot: root });
}

export function readManifest(root: string): Manifest {
  return JSON.parse(readFileSync(path.join(root, ".pu", "manifest.json"), "utf8")) as Manifest;
}

/** The manifest entry of an agent, wherever it lives. */
export function manifestAgent(root: string, agentId: string): (AgentEntry & { pidStartTime?: string }) | undefined {
  const m = readManifest(root);
  if (m.agents[agentId]) return m.agents[agentId];
  for (const wt of Object.values(m.worktrees)) if (wt.agents[agentId]) return wt.agents[agentId];
  return undefined;
}
