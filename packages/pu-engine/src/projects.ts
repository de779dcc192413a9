import fs from "node:fs/promises";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";

interface ProjectsFile {
  version: 1;
  projects: { root: string; lastSeenAt: string }[];
}

// pu-engine does not depend on zod; the file is ours and tiny, so check it by hand.
function parseProjectsFile(text: string): ProjectsFile {
  const data = JSON.parse(text) as unknown;
  const projects = (data as { projects?: unknown } | null)?.projects;
  if (!Array.isArray(projects)) throw new Error("field `projects` must be an array");
  return {
    version: 1,
    projects: projects.map((p: unknown, i) => {
      const { root, lastSeenAt } = (p ?? {}) as { root?: unknown; lastSeenAt?: unknown };
      if (typeof root !== "string" || !path.isAbsolute(root)) throw new Error(`projects[${i}].root must be an absolute path`);
      return { root, lastSeenAt: typeof lastSeenAt === "string" ? lastSeenAt : "" };
    }),
  };
}

/**
 * `$PU_HOME/projects.json`: every project this daemon has served, so a restarted
 * daemon knows which manifests to reconcile. Written atomically (temp + fsync + rename).
 */
export class ProjectRegistry {
  private readonly roots = new Map<string, string>();
  private writing: Promise<void> = Promise.resolve();

  constructor(readonly filePath: string) {}

  /** Reads the file; a missing file is an empty registry, a corrupt one is reported and ignored. */
  async load(): Promise<{ problem?: string }> {
    let text: string;
    try {
      text = await fs.readFile(this.filePath, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
      return { problem: `cannot read ${this.filePath}: ${(err as Error).message}` };
    }
    let parsed: ProjectsFile;
    try {
      parsed = parseProjectsFile(text);
    } catch (err) {
      return { problem: `${this.filePath} is not a valid projects file: ${(err as Error).message}` };
    }
    for (const p of parsed.projects) this.roots.set(p.root, p.lastSeenAt);
    return {};
  }

  list(): string[] {
    return [...this.roots.keys()];
  }

  /** Remembers a project; writes only when it is new. */
  async add(root: string): Promise<void> {
    if (this.roots.has(root)) return;
    this.roots.set(root, new Date().toISOString());
    await this.save();
  }

  private save(): Promise<void> {
    // Serialize writes so two new projects at once cannot interleave temp files.
    const next = this.writing.then(() => this.writeNow());
    this.writing = next.catch(() => undefined);
    return next;
  }

  private async writeNow(): Promise<void> {
    const body: ProjectsFile = {
      version: 1,
      projects: [...this.roots].map(([root, lastSeenAt]) => ({ root, lastSeenAt })),
    };
    await writeFileAtomic(this.filePath, JSON.stringify(body, null, 2) + "\n", { mode: 0o600, fsync: true });
  }
}
