// State files pu writes (the manifest, the work queue's state.json, plan sessions): one
// writer at a time under an exclusive cross-process lock (proper-lockfile: a `<file>.lock`
// directory next to the file, kept fresh while held and taken over once stale), each
// change read fresh under that lock, and landed with write-file-atomic (temp file, fsync,
// rename), so readers never see a partial file and concurrent writers never lose an update.
import { open, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { PuError, isPuError } from "./errors.js";
import { KeyedTurns } from "./keyed-turns.js";

// Neither library ships type declarations; these are the slices we use.
interface LockOptions {
  stale: number;
  update: number;
  realpath: boolean;
  lockfilePath: string;
  retries: { retries: number; factor: number; minTimeout: number; maxTimeout: number; randomize: boolean };
  onCompromised: (error: Error) => void;
}
interface ProperLockfile {
  lock(file: string, options: LockOptions): Promise<() => Promise<void>>;
}
type WriteFileAtomic = (file: string, data: string, options: { fsync: boolean; mode?: number }) => Promise<void>;

const require = createRequire(import.meta.url);
const lockfile = require("proper-lockfile") as ProperLockfile;
const writeFileAtomic = require("write-file-atomic") as WriteFileAtomic;

/** A lock whose holder stopped refreshing it for this long is considered abandoned. */
const LOCK_STALE_MS = 10_000;
const LOCK_REFRESH_MS = 2_000;
// Randomized, capped backoff: with many contending processes every one of them gets
// through, and the budget (~2.5 min) comfortably covers a stale-lock takeover.
const LOCK_RETRIES = { retries: 1500, factor: 1.3, minTimeout: 5, maxTimeout: 100, randomize: true };

export function errnoCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

export function ioError(action: string, path: string, error: unknown): PuError {
  const detail = error instanceof Error ? error.message : String(error);
  return new PuError("IO_ERROR", `cannot ${action} ${path}: ${detail}`, { cause: error });
}

/** A state file's text, or null when there is none yet; any other failure is IO_ERROR naming the file. */
export async function readTextIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw ioError("read", path, error);
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  // Makes the rename itself durable; some filesystems refuse fsync on a directory.
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    /* best effort */
  }
}

/**
 * proper-lockfile retries on every error, so a read-only or full `.pu/` (EROFS, ENOSPC,
 * EACCES) would spin for the whole retry budget. Only a lock someone holds is worth
 * waiting for; every other error fails at once.
 */
async function acquireLock(path: string, options: LockOptions): Promise<() => Promise<void>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await lockfile.lock(path, options);
    } catch (error) {
      if (errnoCode(error) !== "ELOCKED" || attempt >= LOCK_RETRIES.retries) throw error;
    }
    const backoff = (1 + Math.random()) * LOCK_RETRIES.minTimeout * LOCK_RETRIES.factor ** attempt;
    await sleep(Math.min(Math.round(backoff), LOCK_RETRIES.maxTimeout));
  }
}

/**
 * The lock-and-write discipline for one kind of state file. A missing directory surfaces as
 * the raw ENOENT error, for the caller to name in its own terms ("no pu project").
 */
export class LockedFile {
  // Same-process callers take turns here instead of spinning on the file lock.
  private readonly turns = new KeyedTurns();

  /** Where the lock of `file` lives. */
  static lockPath(file: string): string {
    return `${file}.lock`;
  }

  /**
   * Runs `body` while holding `file`'s lock (same-process callers queued first). `body` gets
   * `write(text)`: an atomic, fsynced replacement of the file that fails if the lock was lost.
   */
  withLock<T>(file: string, body: (write: (text: string) => Promise<void>) => Promise<T>, { mode = 0o600 }: { mode?: number } = {}): Promise<T> {
    return this.turns.run(file, () => lockAndRun(file, body, mode));
  }

  /**
   * Runs `body` in `file`'s same-process turn, without the cross-process lock: for a reader of
   * files this process alone changes (with `withLock`), which must never see one in the middle.
   */
  readInTurn<T>(file: string, body: () => Promise<T>): Promise<T> {
    return this.turns.run(file, body);
  }
}

async function lockAndRun<T>(file: string, body: (write: (text: string) => Promise<void>) => Promise<T>, mode: number): Promise<T> {
  const lockFile = LockedFile.lockPath(file);
  let compromised: Error | undefined;
  let release: () => Promise<void>;
  try {
    release = await acquireLock(file, {
      stale: LOCK_STALE_MS,
      update: LOCK_REFRESH_MS,
      realpath: false,
      lockfilePath: lockFile,
      retries: { ...LOCK_RETRIES, retries: 0 },
      // The default handler throws from a timer and would take the daemon down.
      onCompromised: (error) => {
        compromised = error;
      },
    });
  } catch (error) {
    if (errnoCode(error) === "ELOCKED") {
      throw new PuError("TIMEOUT", `timed out waiting for the lock ${lockFile}`, { cause: error });
    }
    if (errnoCode(error) === "ENOENT") throw error;
    throw ioError("lock", file, error);
  }
  const write = async (text: string): Promise<void> => {
    if (compromised) {
      throw new PuError("IO_ERROR", `lost the lock ${lockFile}: ${compromised.message}`, { cause: compromised });
    }
    try {
      await writeFileAtomic(file, text, { fsync: true, mode });
    } catch (error) {
      throw ioError("write", file, error);
    }
    await fsyncDirectory(dirname(file));
  };
  let result: T;
  try {
    result = await body(write);
  } catch (error) {
    // The body's own failure is what the caller needs; a failed release must not hide it.
    await release().catch(() => undefined);
    throw error;
  }
  await release().catch((error: unknown) => {
    // A compromised lock cannot be released; anything else is worth surfacing.
    if (!compromised && !isPuError(error)) throw ioError("unlock", lockFile, error);
  });
  return result;
}
