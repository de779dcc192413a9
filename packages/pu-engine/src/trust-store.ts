// `$PU_HOME/trust.json`: which command-bearing project content its person has trusted.
// The daemon is its only writer; writes are serialized in process and atomic (0600).
import { promises as fs } from "node:fs";
import path from "node:path";
import { Mutex } from "async-mutex";
import writeFileAtomic from "write-file-atomic";
import {
  emptyTrustFile,
  forgetItems,
  parseTrustFile,
  trustItems,
  untrustedError,
  untrustedItems,
  type TrustFile,
  type TrustItem,
} from "@pu/core/trust";

export class TrustStore {
  private readonly writes = new Mutex();
  readonly file: string;

  constructor(home: string) {
    this.file = path.join(home, "trust.json");
  }

  /** The record; a missing file is an empty one, a corrupt one is an error (never overwritten). */
  async read(): Promise<TrustFile> {
    let text: string;
    try {
      text = await fs.readFile(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return emptyTrustFile();
      throw error;
    }
    return parseTrustFile(text, this.file);
  }

  /** Throws UNTRUSTED naming what would run unless every given item is trusted. */
  async require(projectRoot: string, items: readonly (TrustItem | undefined)[]): Promise<void> {
    if (items.every((i) => i === undefined)) return;
    const untrusted = untrustedItems(await this.read(), projectRoot, items);
    if (untrusted.length > 0) throw untrustedError(projectRoot, untrusted);
  }

  async untrusted(projectRoot: string, items: readonly TrustItem[]): Promise<TrustItem[]> {
    return untrustedItems(await this.read(), projectRoot, items);
  }

  /** Records the items as trusted. */
  trust(projectRoot: string, items: readonly (TrustItem | undefined)[]): Promise<void> {
    const given = items.filter((i): i is TrustItem => i !== undefined);
    if (given.length === 0) return Promise.resolve();
    return this.change((record) => trustItems(record, projectRoot, given));
  }

  /** Drops the record of items that are gone (a finished ticket), so the file does not grow without end. */
  forget(projectRoot: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    return this.change((record) => forgetItems(record, projectRoot, keys));
  }

  private change(edit: (record: TrustFile) => void): Promise<void> {
    return this.writes.runExclusive(async () => {
      const record = await this.read();
      const before = JSON.stringify(record);
      edit(record);
      if (JSON.stringify(record) === before) return;
      await writeFileAtomic(this.file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    });
  }
}
