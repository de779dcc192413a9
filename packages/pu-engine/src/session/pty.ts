/**
 * The one place pu-engine touches node-pty. A session gets its terminal from a `SpawnPty`
 * (node-pty's by default), so a test can hand it a terminal of its own, and the read side
 * node-pty keeps private is reached only through `ptyReadSide` below.
 */
import * as pty from "node-pty";

/** What a session needs of a pseudo-terminal: node-pty's `IPty`, narrowed to what pu uses. */
export interface PtyProcess {
  readonly pid: number;
  /** Output as raw bytes (spawned with `encoding: null`). */
  onData(listener: (data: string | Buffer) => void): unknown;
  onExit(listener: (exit: { exitCode: number; signal?: number | undefined }) => void): unknown;
  write(data: string): void;
  resize(cols: number, rows: number): void;
}

export interface PtySpawnOptions {
  name: string;
  cols: number;
  rows: number;
  cwd: string;
  env: Record<string, string>;
}

export type SpawnPty = (file: string, args: string[], options: PtySpawnOptions) => PtyProcess;

/** node-pty, with raw bytes in and out: no decode/re-encode, split UTF-8 sequences stay intact. */
export const spawnNodePty: SpawnPty = (file, args, options) => pty.spawn(file, args, { ...options, encoding: null } as pty.IPtyForkOptions);

/** node-pty's read stream over the PTY master, as far as the session's tail guard uses it. */
export interface PtyReadStream {
  destroy: (...args: unknown[]) => unknown;
  readonly destroyed: boolean;
  readonly readableEnded: boolean;
}

/**
 * The PTY master's fd and node-pty's read stream over it, or undefined for a terminal that
 * is not node-pty's (or a node-pty whose internals changed). node-pty exposes neither, but
 * the last output of an exiting agent can only be saved by reading the fd before node-pty
 * closes it (node-pty issues #85 and #726; see AgentSession.guardPtyTail), so this reads
 * its private `_socket` and `fd` — here and nowhere else.
 */
export function ptyReadSide(term: PtyProcess): { stream: PtyReadStream; fd: number } | undefined {
  const internals = term as unknown as { _socket?: Partial<PtyReadStream>; fd?: unknown };
  const socket = internals._socket;
  const fd = internals.fd;
  if (!socket || typeof socket.destroy !== "function" || typeof fd !== "number") return undefined;
  return { stream: socket as PtyReadStream, fd };
}
