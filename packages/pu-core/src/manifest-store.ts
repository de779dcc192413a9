// The one way to read and change .pu/manifest.json: every change is made under the
// manifest's lock on a fresh read and lands atomically (see locked-file.ts).
import { mkdir, readFile, access } from "node:fs/promises";
import { PuError } from "./errors.js";
import { errnoCode, ioError, LockedFile } from "./locked-file.js";
import {
  ManifestSchema,
  describeFirstIssue,
  newManifest,
  parseManifest,
  serializeManifest,
  type Manifest,
} from "./manifest.js";
import { manifestPath, puDir } from "./paths.js";


export function lockPath(root: string): string {
  return LockedFile.lockPath(manifestPath(root));
}

function notInitialized(root: string): PuError {
  return new PuError("NOT_INITIALIZED", `no pu project at ${root} (missing ${manifestPath(root)}); run \`pu init\``);
}

export class ManifestStore {
  private readonly file = new LockedFile();

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
    return this.withLock(root, async (write) => {
      const manifest = await this.readFrom(root);
      const result = await fn(manifest);
      manifest.updatedAt = new Date().toISOString();
      await write(this.checkedText(root, manifest));
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
    return this.withLock(root, async (write) => {
      if (await this.exists(root)) return { manifest: await this.readFrom(root), created: false };
      const manifest = newManifest(root, now);
      await write(this.checkedText(root, manifest));
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

  private checkedText(root: string, manifest: Manifest): string {
    const checked = ManifestSchema.safeParse(manifest);
    if (!checked.success) {
      throw new PuError(
        "MANIFEST_INVALID",
        `refusing to write an invalid manifest to ${manifestPath(root)}: ${describeFirstIssue(checked.error)}`,
        { cause: checked.error },
      );
    }
    return serializeManifest(checked.data);
  }

  private async withLock<T>(root: string, body: (write: (text: string) => Promise<void>) => Promise<T>): Promise<T> {
    try {
      // 0600: the manifest holds every agent's prompt.
      return await this.file.withLock(manifestPath(root), body, { mode: 0o600 });
    } catch (error) {
      if (errnoCode(error) === "ENOENT") throw notInitialized(root);
      throw error;
    }
  }
}
