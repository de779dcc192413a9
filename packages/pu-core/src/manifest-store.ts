// The one way to read and change .pu/manifest.json. Changes happen under an
// exclusive cross-process lock (proper-lockfile: a `manifest.json.lock` directory
// next to the manifest, kept fresh while held and taken over once stale), are read
// fresh under that lock, and land with write-file-atomic (temp file, fsync, rename),
// so readers never see a partial file and concurrent writers never lose an update.
import { mkdir, open, readFile, access } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { PuError, isPuError } from "./errors.js";
import {
  ManifestSchema,
  describeFirstIssue,
  newManifest,
  parseManifest,
  serializeManifest,
  type Manifest,
} from "./manifest.js";
import { manifestPath, puDir } from "./paths.js";

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
export const LOCK_STALE_MS = 10_000;
const LOCK_REFRESH_MS = 2_000;
// Randomized, capped backoff: with many contending processes every one of them gets
// through, and the budget (~2.5 min) comfortably covers a stale-lock takeover.
const LOCK_RETRIES = { retries: 1500, factor: 1.3, minTimeout: 5, maxTimeout: 100, randomize: true };

export function lockPath(root: string): string {
  return `${manifestPath(root)}.lock`;
}

function errnoCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function notInitialized(root: string): PuError {
  return new PuError("NOT_INITIALIZED", `no pu project at ${root} (missing ${manifestPath(root)}); run \`pu init\``);
}

function ioError(action: string, path: string, error: unknown): PuError {
  const detail = error instanceof Error ? error.message : String(error);
  return new PuError("IO_ERROR", `cannot ${action} ${path}: ${detail}`, { cause: error });
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

export class ManifestStore {
  // Same-process callers queue here instead of spinning on the file lock.
  private readonly queues = new Map<string, Promise<unknown>>();

  async exists(root: string): Promise<boolean> {
    try {
      await access(manifestPath(root));
      return true;
    } catch {
      return false;
    }
  }

  /** The manifest as it is on disk now (no lock needed: writes are atomic renames). */
  async read(root: string): Promise<Manifest> {
    return this.readFrom(root);
  }

  /**
   * Runs `fn` on a fresh copy of the manifest under the lock and writes the result
   * (with a new `updatedAt`) unless `fn` throws. Returns what `fn` returned.
   */
  async update<T>(root: string, fn: (manifest: Manifest) => T | Promise<T>): Promise<T> {
    // Checked before locking too: the lock library would retry a missing `.pu/` for minutes.
    if (!(await this.exists(root))) throw notInitialized(root);
    return this.withLock(root, async (assertLockHeld) => {
      const manifest = await this.readFrom(root);
      const result = await fn(manifest);
      manifest.updatedAt = new Date().toISOString();
      await this.write(root, manifest, assertLockHeld);
      return result;
    });
  }

  /** Writes a fresh manifest unless one exists; an existing valid one is returned as is. */
  async create(root: string, now: Date = new Date()): Promise<{ manifest: Manifest; created: boolean }> {
    try {
      await mkdir(puDir(root), { recursive: true });
    } catch (error) {
      throw ioError("create", puDir(root), error);
    }
    return this.withLock(root, async (assertLockHeld) => {
      if (await this.exists(root)) return { manifest: await this.readFrom(root), created: false };
      const manifest = newManifest(root, now);
      await this.write(root, manifest, assertLockHeld);
      return { manifest, created: true };
    });
  }

  private async readFrom(root: string): Promise<Manifest> {
    const path = manifestPath(root);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") throw notInitialized(root);
      throw ioError("read", path, error);
    }
    return parseManifest(text, path);
  }

  private async write(root: string, manifest: Manifest, assertLockHeld: () => void): Promise<void> {
    const path = manifestPath(root);
    const checked = ManifestSchema.safeParse(manifest);
    if (!checked.success) {
      throw new PuError(
        "MANIFEST_INVALID",
        `refusing to write an invalid manifest to ${path}: ${describeFirstIssue(checked.error)}`,
        { cause: checked.error },
      );
    }
    assertLockHeld();
    try {
      // 0600: the manifest holds every agent's prompt.
      await writeFileAtomic(path, serializeManifest(checked.data), { fsync: true, mode: 0o600 });
    } catch (error) {
      throw ioError("write", path, error);
    }
    await fsyncDirectory(dirname(path));
  }

  private async withLock<T>(root: string, body: (assertLockHeld: () => void) => Promise<T>): Promise<T> {
    const key = manifestPath(root);
    const previous = this.queues.get(key) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.lockAndRun(root, body));
    const tail = run.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  private async lockAndRun<T>(root: string, body: (assertLockHeld: () => void) => Promise<T>): Promise<T> {
    const path = manifestPath(root);
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    try {
      release = await acquireLock(path, {
        stale: LOCK_STALE_MS,
        update: LOCK_REFRESH_MS,
        realpath: false,
        lockfilePath: lockPath(root),
        retries: { ...LOCK_RETRIES, retries: 0 },
        // The default handler throws from a timer and would take the daemon down.
        onCompromised: (error) => {
          compromised = error;
        },
      });
    } catch (error) {
      if (errnoCode(error) === "ENOENT") throw notInitialized(root);
      if (errnoCode(error) === "ELOCKED") {
        throw new PuError("TIMEOUT", `timed out waiting for the manifest lock ${lockPath(root)}`, { cause: error });
      }
      throw ioError("lock", path, error);
    }
    const assertLockHeld = (): void => {
      if (compromised) {
        throw new PuError("IO_ERROR", `lost the manifest lock ${lockPath(root)}: ${compromised.message}`, {
          cause: compromised,
        });
      }
    };
    let result: T;
    try {
      result = await body(assertLockHeld);
    } catch (error) {
      // The update's own failure is what the caller needs; a failed release must not hide it.
      await release().catch(() => undefined);
      throw error;
    }
    await release().catch((error: unknown) => {
      // A compromised lock cannot be released; anything else is worth surfacing.
      if (!compromised && !isPuError(error)) throw ioError("unlock", lockPath(root), error);
    });
    return result;
  }
}
