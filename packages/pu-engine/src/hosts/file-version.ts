// The files behind a status report's problems ($PU_HOME/hosts.json, remote-projects.json) can be
// fixed, or go bad, while a dashboard is open. Reading and parsing them on a timer would cost; a
// stat does not: while a status stream is open the daemon compares each file's version (this)
// every few seconds and reads the file again only when it changed.
import { stat } from "node:fs/promises";

/**
 * What identifies one version of a file on disk: inode, size, modification and change time (the
 * change time moves with a chmod, which can make an unreadable file readable). A file that is
 * not there, or cannot be stat'ed, is a version too (named by the error), so that it coming back
 * counts as a change. Never throws.
 */
async function fileVersion(file: string): Promise<string> {
  try {
    const s = await stat(file, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (error) {
    return `error:${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

/** The version of one file as last read (noted just before reading, so a change during the read is seen next time). */
export class FileVersion {
  private seen: string | undefined;

  constructor(readonly file: string) {}

  /** Remembers the file as it is now; call before reading it (or after writing it). */
  async note(): Promise<void> {
    this.seen = await fileVersion(this.file);
  }

  /** Whether the file is no longer the version last noted (true when none was). */
  async changed(): Promise<boolean> {
    return this.seen === undefined || (await fileVersion(this.file)) !== this.seen;
  }
}
