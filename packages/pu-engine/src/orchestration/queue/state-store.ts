/**
 * `$PU_HOME/state.json`, the work queue's state in the Operator seed's shape. The daemon is its
 * only writer: it holds the state in memory and lands every change under the file's lock with
 * an atomic rename (LockedFile, as the manifest does). A file that does not parse or validate
 * is reported and never overwritten: the queue stands still until a person fixes or moves it —
 * at start, and when the file is found changed under the running daemon before a write.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { FileWitness } from "@pu/core/file-witness";
import { LockedFile } from "@pu/core/locked-file";
import { emptyOperatorState, parseOperatorState, serializeOperatorState, type OperatorState } from "@pu/core/operator-state";

export function operatorStatePath(home: string): string {
  return path.join(home, "state.json");
}

export class OperatorStateStore {
  private readonly lockedFile = new LockedFile();
  private current: OperatorState = emptyOperatorState();
  /** Why the file could not be read; while set nothing is written. */
  private problem: string | undefined;
  /** The file as this store last read or wrote it: one changed since is read before it is written over. */
  private readonly witness = new FileWitness();

  constructor(readonly file: string) {}

  async load(): Promise<void> {
    let text: string;
    try {
      await this.witness.note(this.file);
      text = await readFile(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      this.problem = `cannot read ${this.file}: ${(err as Error).message}`;
      return;
    }
    try {
      this.current = parseOperatorState(text, this.file);
      this.current.multi_agent_groups ??= [];
    } catch (err) {
      this.problem = (err as Error).message;
    }
  }

  get error(): string | undefined {
    return this.problem;
  }

  /** The state as last written (read-only by convention: change it through `update`). */
  get state(): OperatorState {
    return this.current;
  }

  /** INVALID_STATE naming the file when it could not be read. */
  ensureUsable(): void {
    if (this.problem !== undefined) {
      throw new PuError("INVALID_STATE", `${this.problem} (the queue is stopped; fix or move the file and restart the daemon)`);
    }
  }

  /** Applies `change` in memory and writes the file; changes are landed one at a time, in order. */
  async update<T>(change: (state: OperatorState) => T): Promise<T> {
    this.ensureUsable();
    const result = change(this.current);
    const text = serializeOperatorState(this.current);
    await this.lockedFile.withLock(this.file, async (write) => {
      await this.refuseIfSpoiled();
      await write(text);
      await this.witness.note(this.file);
    });
    return result;
  }

  /**
   * The file changed under the daemon since it last read or wrote it: written over only while
   * it still parses. One that does not stops the queue, as a corrupt file found at start does.
   */
  private async refuseIfSpoiled(): Promise<void> {
    const spoiled = await this.witness.spoiledSinceNoted(this.file, (text) => parseOperatorState(text, this.file));
    if (spoiled === undefined) return;
    this.problem = `${spoiled} (changed while the daemon ran)`;
    this.ensureUsable();
  }

}
