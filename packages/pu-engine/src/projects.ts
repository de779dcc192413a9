import { readFile } from "node:fs/promises";
import { LockedFile } from "@pu/core/locked-file";
import { parseProjectsFile, type ProjectsFile } from "@pu/core/projects-file";

/**
 * `$PU_HOME/projects.json`: every project this daemon has served, so a restarted daemon knows
 * which manifests to reconcile. Written under the file's lock, atomically (LockedFile). A file
 * that cannot be read or parsed keeps its `problem` and is never written while it is set: the
 * projects it lists (the daemon knows only this run's) would be lost.
 */
export class ProjectRegistry {
  private readonly roots = new Map<string, string>();
  private readonly lockedFile = new LockedFile();
  private unreadable: string | undefined;

  constructor(readonly filePath: string) {}

  /** Why the file could not be used; while set, projects are served but not remembered. */
  get problem(): string | undefined {
    return this.unreadable === undefined ? undefined : `${this.unreadable} (pu leaves it as it is and remembers no new project until it is fixed, then \`pu daemon restart\`)`;
  }

  /** Reads the file; a missing file is an empty registry, one that cannot be read sets `problem`. */
  async load(): Promise<{ problem?: string }> {
    const parsed = await this.read();
    if (parsed === undefined) return this.problem === undefined ? {} : { problem: this.problem };
    for (const p of parsed.projects) this.roots.set(p.root, p.lastSeenAt);
    return {};
  }

  list(): string[] {
    return [...this.roots.keys()];
  }

  /** Remembers a project; writes only when it is new, and never over a file it could not read. */
  async add(root: string): Promise<void> {
    if (this.roots.has(root)) return;
    this.roots.set(root, new Date().toISOString());
    if (this.unreadable !== undefined) return;
    await this.lockedFile.withLock(this.filePath, async (write) => {
      // Read again under the lock: a file broken since the start is not overwritten either.
      const onDisk = await this.read();
      if (this.unreadable !== undefined) return;
      for (const p of onDisk?.projects ?? []) if (!this.roots.has(p.root)) this.roots.set(p.root, p.lastSeenAt);
      const body: ProjectsFile = { version: 1, projects: [...this.roots].map(([r, lastSeenAt]) => ({ root: r, lastSeenAt })) };
      await write(`${JSON.stringify(body, null, 2)}\n`);
    });
  }

  /** The file's content; undefined when there is none or it cannot be used (then `unreadable` says why). */
  private async read(): Promise<ProjectsFile | undefined> {
    let text: string;
    try {
      text = await readFile(this.filePath, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      this.unreadable = `cannot read ${this.filePath}: ${(err as Error).message}`;
      return undefined;
    }
    try {
      return parseProjectsFile(text, this.filePath);
    } catch (err) {
      this.unreadable = (err as Error).message;
      return undefined;
    }
  }
}
