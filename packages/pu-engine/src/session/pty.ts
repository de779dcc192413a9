/**
 * The one place pu-engine touches node-pty. A session gets its terminal from a `SpawnPty`
 * (node-pty's by default), so a test can hand it a terminal of its own, and the read side
 * node-pty keeps private is reached only through `ptyReadSide` below. Also here: what is read
 * of a PTY's fd directly (its last output), and the check before a spawn.
 */
import { readSync, statSync } from "node:fs";
import { PuError } from "@pu/core/errors";
import { findExecutable } from "@pu/core/executables";
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

/**
 * Reads what the kernel still holds for a PTY master (up to `maxBytes`), each read handed to
 * `onChunk` as a buffer of its own. "held": some process still has the terminal open (more may
 * come later); "shut": the other side is closed and everything has been read.
 */
export function readPtyRemaining(fd: number, maxBytes: number, onChunk: (chunk: Buffer) => void): "held" | "shut" {
  const buf = Buffer.allocUnsafe(64 * 1024);
  let total = 0;
  while (total < maxBytes) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      // EAGAIN: nothing right now, and some process still has the terminal open.
      // EIO (or EBADF once closed): the other side is gone and nothing is left.
      return (err as NodeJS.ErrnoException).code === "EAGAIN" ? "held" : "shut";
    }
    if (n === 0) return "shut";
    total += n;
    onChunk(Buffer.from(buf.subarray(0, n)));
  }
  return "held";
}

/**
 * node-pty reports an unstartable program only as output plus exit code 1, so
 * the obvious failures are checked up front to give the user a real error.
 */
export function checkSpawnable(file: string, cwd: string, env: Record<string, string>): void {
  try {
    if (!statSync(cwd).isDirectory()) throw new Error("not a directory");
  } catch (err) {
    throw new PuError("SPAWN_FAILED", `cannot start ${file}: working directory ${cwd}: ${(err as Error).message}`);
  }
  if (findExecutable(file, cwd, env.PATH) !== undefined) return;
  throw new PuError("SPAWN_FAILED", `cannot start ${file}: command not found or not executable`);
}
