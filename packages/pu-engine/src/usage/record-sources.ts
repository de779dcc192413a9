/**
 * Where each agent CLI records the tokens it used, for the environment pu gave it, and the
 * incremental reading of those records. A source is read from its start when first met (also
 * after a daemon restart) and then only what was appended; its tally is always the whole
 * source's, so replacing a stored tally never counts anything twice.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { open, readdir } from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import {
  ClaudeRecordReader,
  CodexRecordReader,
  addToTally,
  claudeProjectFolder,
  openCodeMessageCall,
  type UsageCall,
  type UsageTally,
} from "@pu/core/usage";

/** At most this much of a record file is read per poll, so a huge backlog never stalls the daemon. */
const READ_CHUNK_BYTES = 4 * 1024 * 1024;
/** A record started this long before the agent still counts as its own (clocks, start-up). */
const START_SLACK_MS = 5_000;

export interface RecordSource {
  /** Stable across restarts: `claude:/path`, `codex:/path`, `opencode:/db#session`. */
  readonly key: string;
  /** Reads what is new; true when the tally changed. */
  poll(): Promise<boolean>;
  tally(): UsageTally;
}

/** An append-only JSONL record read line by line by a CLI's reader. */
class JsonlSource implements RecordSource {
  private offset = 0;
  private partial = "";
  private current: UsageTally = {};
  private reader: { line(text: string): { call: UsageCall; calls: number }[] };

  constructor(
    readonly key: string,
    private readonly file: string,
    private readonly newReader: () => { line(text: string): { call: UsageCall; calls: number }[] },
  ) {
    this.reader = newReader();
  }

  tally(): UsageTally {
    return this.current;
  }

  // Synchronous on purpose: a stat and a small read cost microseconds, far less than the thread
  // pool's hand-offs of the async calls (this runs for every followed record every second).
  async poll(): Promise<boolean> {
    let fd: number;
    try {
      fd = openSync(this.file, "r");
    } catch {
      return false; // gone (or not yet there): the last tally stands
    }
    let text: string;
    try {
      const size = fstatSync(fd).size;
      if (size < this.offset) {
        // Rewritten shorter: read it again from the start.
        this.offset = 0;
        this.partial = "";
        this.current = {};
        this.reader = this.newReader();
      }
      if (size === this.offset) return false;
      const buffer = Buffer.allocUnsafe(Math.min(size - this.offset, READ_CHUNK_BYTES));
      const read = readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset += read;
      text = this.partial + buffer.toString("utf8", 0, read);
    } finally {
      closeSync(fd);
    }
    const lines = text.split("\n");
    // The last piece has no newline yet: the CLI is still writing it.
    this.partial = lines.pop() ?? "";
    let changed = false;
    for (const line of lines) {
      // Most lines (prompts, tool output) carry no usage: not parsed at all.
      if (!line.includes('"usage"') && !line.includes('"token_count"') && !line.includes('"turn_context"')) continue;
      for (const { call, calls } of this.reader.line(line)) {
        addToTally(this.current, call, calls);
        changed = true;
      }
    }
    return changed;
  }
}

function claudeSource(file: string): RecordSource {
  return new JsonlSource(`claude:${file}`, file, () => new ClaudeRecordReader());
}

function codexSource(file: string): RecordSource {
  return new JsonlSource(`codex:${file}`, file, () => new CodexRecordReader());
}

/** One OpenCode session in its SQLite database; messages grow until they complete. */
class OpenCodeSource implements RecordSource {
  readonly key: string;
  private readonly calls = new Map<string, UsageCall>();
  private since = -1;
  private current: UsageTally = {};

  constructor(
    private readonly db: OpenCodeDatabase,
    readonly sessionId: string,
  ) {
    this.key = `opencode:${db.file}#${sessionId}`;
  }

  tally(): UsageTally {
    return this.current;
  }

  async poll(): Promise<boolean> {
    const rows = this.db.messagesSince(this.sessionId, this.since);
    if (rows.length === 0) return false;
    for (const row of rows) {
      this.since = Math.max(this.since, row.time_updated);
      const call = openCodeMessageCall(row.data, row.time_created);
      if (call) this.calls.set(row.id, call);
    }
    const tally: UsageTally = {};
    for (const call of this.calls.values()) addToTally(tally, call, 1);
    this.current = tally;
    return true;
  }
}

interface SessionRow {
  id: string;
  parentId: string | null;
  createdMs: number;
}

interface MessageRow {
  id: string;
  time_created: number;
  time_updated: number;
  data: string;
}

// The native SQLite binding is loaded when an OpenCode agent first needs it, not at daemon start.
const requireModule = createRequire(import.meta.url);

/** OpenCode's database, opened read-only once per file and shared by its agents. */
class OpenCodeDatabase {
  private handle: BetterSqlite3.Database | undefined;

  constructor(readonly file: string) {}

  private db(): BetterSqlite3.Database | undefined {
    if (this.handle) return this.handle;
    try {
      const Database = requireModule("better-sqlite3") as typeof BetterSqlite3;
      this.handle = new Database(this.file, { readonly: true, fileMustExist: true });
      this.handle.pragma("busy_timeout = 200");
    } catch {
      this.handle = undefined;
    }
    return this.handle;
  }

  /** Sessions started in `directory` since `sinceMs`. */
  sessionsIn(directory: string, sinceMs: number): SessionRow[] {
    return this.sessions("directory = ? AND time_created >= ? ORDER BY time_created", [directory, sinceMs]);
  }

  /** The sub-sessions (subagents) of these sessions. */
  childrenOf(sessionIds: string[]): SessionRow[] {
    if (sessionIds.length === 0) return [];
    return this.sessions(`parent_id IN (${sessionIds.map(() => "?").join(",")})`, sessionIds);
  }

  private sessions(where: string, params: (string | number)[]): SessionRow[] {
    const db = this.db();
    if (!db) return [];
    try {
      return db.prepare(`SELECT id, parent_id AS parentId, time_created AS createdMs FROM session WHERE ${where}`).all(...params) as SessionRow[];
    } catch {
      return [];
    }
  }

  messagesSince(sessionId: string, sinceMs: number): MessageRow[] {
    const db = this.db();
    if (!db) return [];
    try {
      return db.prepare("SELECT id, time_created, time_updated, data FROM message WHERE session_id = ? AND time_updated > ?").all(sessionId, sinceMs) as MessageRow[];
    } catch {
      return [];
    }
  }

  close(): void {
    this.handle?.close();
    this.handle = undefined;
  }
}

function openCodeSource(db: OpenCodeDatabase, sessionId: string): RecordSource {
  return new OpenCodeSource(db, sessionId);
}

/** The part of an agent pu needs to find its records. */
export interface RecordedAgent {
  agentId: string;
  agentType: string;
  cwd: string;
  sessionId?: string;
  startedAtMs: number;
  env: NodeJS.ProcessEnv;
}

function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME ?? process.env.HOME ?? "/";
}

/** Claude Code: the session file pu named with `--session-id`. */
function claudeRecordFile(agent: RecordedAgent): string | undefined {
  if (!agent.sessionId) return undefined;
  const configDir = agent.env.CLAUDE_CONFIG_DIR ?? path.join(homeOf(agent.env), ".claude");
  return path.join(configDir, "projects", claudeProjectFolder(agent.cwd), `${agent.sessionId}.jsonl`);
}

function codexHomeOf(env: NodeJS.ProcessEnv): string {
  return env.CODEX_HOME ?? path.join(homeOf(env), ".codex");
}

function openCodeDatabaseFile(env: NodeJS.ProcessEnv): string {
  const data = env.XDG_DATA_HOME ?? path.join(homeOf(env), ".local", "share");
  return path.join(data, "opencode", "opencode.db");
}

const pad = (n: number) => String(n).padStart(2, "0");

/** Codex's day folders (`sessions/YYYY/MM/DD`) from the agent's start to now, in UTC and local time. */
function codexDayFolders(codexHome: string, fromMs: number, nowMs: number): string[] {
  const folders = new Set<string>();
  for (let t = fromMs - 86_400_000; t <= nowMs + 86_400_000; t += 86_400_000) {
    const d = new Date(t);
    folders.add(path.join(codexHome, "sessions", String(d.getUTCFullYear()), pad(d.getUTCMonth() + 1), pad(d.getUTCDate())));
    folders.add(path.join(codexHome, "sessions", String(d.getFullYear()), pad(d.getMonth() + 1), pad(d.getDate())));
  }
  return [...folders];
}

/** A Codex rollout's first line: whose directory and when it started. */
async function codexRolloutMeta(file: string): Promise<{ cwd: string; startedMs: number } | undefined> {
  let handle;
  try {
    handle = await open(file, "r");
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const first = buffer.subarray(0, bytesRead).toString("utf8").split("\n")[0] ?? "";
    const entry = JSON.parse(first) as { type?: string; payload?: { cwd?: unknown; timestamp?: unknown } };
    if (entry.type !== "session_meta" || typeof entry.payload?.cwd !== "string") return undefined;
    const startedMs = typeof entry.payload.timestamp === "string" ? Date.parse(entry.payload.timestamp) : Number.NaN;
    return Number.isNaN(startedMs) ? undefined : { cwd: entry.payload.cwd, startedMs };
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

async function rolloutFiles(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder)).filter((name) => name.startsWith("rollout-") && name.endsWith(".jsonl")).map((name) => path.join(folder, name));
  } catch {
    return [];
  }
}

/**
 * Of the agents sharing a directory, the one a record started at `recordMs` belongs to: the
 * latest to start before it (with some slack), so several agents in one directory (`--root`)
 * each get their own.
 */
function ownerByStart<T extends { startedAtMs: number }>(candidates: readonly T[], recordMs: number): T | undefined {
  let best: T | undefined;
  for (const candidate of candidates) {
    if (candidate.startedAtMs - START_SLACK_MS > recordMs) continue;
    if (!best || candidate.startedAtMs > best.startedAtMs) best = candidate;
  }
  return best;
}

/**
 * Which records belong to which agent: each found once, never given to two agents. OpenCode's
 * databases are opened once per file and shared.
 */
export class RecordFinder {
  private readonly databases = new Map<string, OpenCodeDatabase>();
  private readonly claimed = new Set<string>();

  /**
   * Records of `agent` not yet among `have`; `running` are all the agents being followed, so a
   * record in a shared directory goes to the one that started last before it.
   */
  async discover(agent: RecordedAgent, have: ReadonlyMap<string, RecordSource>, running: readonly RecordedAgent[]): Promise<RecordSource[]> {
    const peers = running.filter((a) => a.agentType === agent.agentType && a.cwd === agent.cwd);
    if (agent.agentType === "claude") {
      const file = claudeRecordFile(agent);
      return file && !have.has(`claude:${file}`) ? [claudeSource(file)] : [];
    }
    if (agent.agentType === "codex") {
      const found: RecordSource[] = [];
      for (const folder of codexDayFolders(codexHomeOf(agent.env), agent.startedAtMs, Date.now())) {
        for (const file of await rolloutFiles(folder)) {
          if (this.claimed.has(`codex:${file}`)) continue;
          const meta = await codexRolloutMeta(file);
          if (!meta || meta.cwd !== agent.cwd || meta.startedMs < agent.startedAtMs - START_SLACK_MS) continue;
          if (ownerByStart(peers, meta.startedMs) !== agent) continue;
          found.push(this.claim(codexSource(file)));
        }
      }
      return found;
    }
    if (agent.agentType === "opencode") {
      const db = this.database(openCodeDatabaseFile(agent.env));
      const sessions = db.sessionsIn(agent.cwd, agent.startedAtMs - START_SLACK_MS).filter((s) => s.parentId === null && ownerByStart(peers, s.createdMs) === agent);
      const own = [...have.keys()].map((key) => key.slice(key.lastIndexOf("#") + 1));
      const children = db.childrenOf([...own, ...sessions.map((s) => s.id)]);
      return [...sessions, ...children].map((session) => openCodeSource(db, session.id)).filter((source) => !this.claimed.has(source.key)).map((source) => this.claim(source));
    }
    return [];
  }

  /** A source named in usage.json, to read again (and not to be given to another agent). */
  fromKey(key: string): RecordSource | undefined {
    const colon = key.indexOf(":");
    const kind = key.slice(0, colon);
    const rest = key.slice(colon + 1);
    if (kind === "claude") return claudeSource(rest);
    if (kind === "codex") return this.claim(codexSource(rest));
    if (kind === "opencode") {
      const hash = rest.lastIndexOf("#");
      return this.claim(openCodeSource(this.database(rest.slice(0, hash)), rest.slice(hash + 1)));
    }
    return undefined;
  }

  close(): void {
    for (const db of this.databases.values()) db.close();
  }

  private claim(source: RecordSource): RecordSource {
    this.claimed.add(source.key);
    return source;
  }

  private database(file: string): OpenCodeDatabase {
    let db = this.databases.get(file);
    if (!db) {
      db = new OpenCodeDatabase(file);
      this.databases.set(file, db);
    }
    return db;
  }
}
