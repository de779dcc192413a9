// A state file the daemon holds in memory and alone writes (state.json, usage.json) can still be
// changed under it: by hand, by a tool, by a disk going bad. Before writing over it, the daemon
// needs to know whether what is there is still what it last read or wrote; if not, what is there
// is read first, so a file that no longer parses is reported and kept, never replaced.
import { readFile, stat } from "node:fs/promises";

/** What identifies one version of a file on disk: inode, size and modification time. */
async function versionOf(file: string): Promise<string> {
  try {
    const s = await stat(file, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw error;
  }
}

export class FileWitness {
  private seen: string | undefined;

  /** Remembers the file as it is now (after reading or writing it). */
  async note(file: string): Promise<void> {
    this.seen = await versionOf(file);
  }

  /** Whether the file is no longer the version last noted (true when none was). */
  async changed(file: string): Promise<boolean> {
    return this.seen === undefined || (await versionOf(file)) !== this.seen;
  }

  /**
   * Why the file can no longer be written over: it changed since last noted and what is there
   * now does not parse (`parse` throws). Undefined when it is unchanged, gone, or still parses.
   */
  async spoiledSinceNoted(file: string, parse: (text: string) => unknown): Promise<string | undefined> {
    if (!(await this.changed(file))) return undefined;
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    try {
      parse(text);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }
}
