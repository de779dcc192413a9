// A state file the daemon holds in memory and alone writes (state.json, usage.json) can still be
// changed under it: by hand, by a tool, by a disk going bad. Before writing over it, the daemon
// needs to know whether what is there is still what it last read or wrote; if not, what is there
// is read first, so a file that no longer parses is reported and kept, never replaced.
import { stat } from "node:fs/promises";

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
}
