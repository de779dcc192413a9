// A state file the daemon holds in memory and alone writes (state.json, usage.json) can still be
// changed under it: by hand, by a tool, by a disk going bad. Files it only reads
// (hosts.json, remote-projects.json behind a status's problem lines) are looked at the same way:
// a stat is cheap, a read and parse is not, so a file is read again only when its version moved. Before writing over it, the daemon
// needs to know whether what is there is still what it last read or wrote; if not, what is there
// is read first, so a file that no longer parses is reported and kept, never replaced.
import { readFile, stat } from "node:fs/promises";

/**
 * What identifies one version of a file on disk: inode, size, modification and change time (the
 * change time moves with a chmod, which can make an unreadable file readable). A file that is not
 * there, or cannot be stat'ed, is a version too (named by the error), so that it coming back
 * counts as a change. Never throws.
 */
async function versionOf(file: string): Promise<string> {
  try {
    const s = await stat(file, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (error) {
    return `error:${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

export class FileWitness {
  private seen: string | undefined;

  /** Remembers the file as it is now (before reading it, so a change during the read is seen next time; or after writing it). */
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
