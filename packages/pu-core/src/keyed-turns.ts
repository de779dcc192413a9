/**
 * Work that must not overlap for one key (a state file, a plan session, a host's mirror) takes
 * turns: one body at a time per key, in the order asked, while other keys go on. A body's
 * failure is its own caller's and never holds up the next turn. Within one process only: what
 * other processes do is for a file lock to keep apart.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, body: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const turn = previous.then(body);
    const tail = turn.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return turn;
  }

  /** How many keys have a turn running or waiting (nothing is kept once a key's turns are over). */
  get busyKeys(): number {
    return this.tails.size;
  }
}
