/**
 * One running agent: its PTY process, the ring holding its recent output, its
 * activity clock, and the viewers attached to it.
 *
 * Output flows PTY → ring → viewers. Viewers are pumped from the ring at their
 * own pace, so a slow or stalled viewer costs nothing but its position in the
 * ring: it never blocks the PTY or the other viewers, and when the ring
 * overwrites bytes it still needed it skips ahead and is told so.
 */
import { constants as osConstants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { ActivityTracker } from "@pu/core/activity";
import { PuError } from "@pu/core/errors";
import { OutputRing, DEFAULT_RING_BYTES } from "./output-ring.js";
import { killProcessGroup, killProcessTree, waitForGroupGone } from "../process-info.js";

const CARRIAGE_RETURN = 0x0d;
import { ScreenModel } from "./screen-model.js";
import { checkSpawnable, ptyReadSide, readPtyRemaining, spawnNodePty, type PtyProcess, type SpawnPty } from "./pty.js";
import { RingViewer, VIEWER_BATCH_BYTES, type Viewer, type ViewerSink } from "./ring-viewer.js";

export interface SpawnOptions {
  agentId: string;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols?: number;
  rows?: number;
  ringBytes?: number;
  /** Where the terminal comes from: node-pty unless a test gives its own. */
  spawnPty?: SpawnPty;
}

/** How long after SIGTERM a still-running agent is also sent SIGHUP. */
const HANGUP_AFTER_MS = 300;

/** After a chunk has proved meaningful, output is not judged again for this long (see handleData). */
export const ACTIVITY_SAMPLE_MS = 50;
/** While output streams, viewers are fed at most once per this many ms (see scheduleViewerPump). */
export const VIEWER_BATCH_MS = 4;
/** A PTY read smaller than this means the agent is not flooding: it goes out at once. */
export const VIEWER_BATCH_MIN_READ_BYTES = 1024;
/**
 * When the agent has exited but something it started still holds the terminal open,
 * its exit is reported once that output has been quiet this long (see holdBackClose)...
 */
export const EXIT_DRAIN_QUIET_MS = 2000;
/** ...or after this long at most, however much the leftover process keeps writing. */
export const EXIT_DRAIN_MAX_MS = 5000;
/** Most bytes read from the PTY in one synchronous tail drain (a writer cannot keep it spinning). */
const TAIL_DRAIN_MAX_BYTES = 4 * 1024 * 1024;

type OutputListener = (chunk: Buffer, offset: number) => void;
type ExitListener = (exitCode: number) => void;

export class AgentSession {
  readonly agentId: string;
  readonly pid: number;
  readonly ring: OutputRing;
  readonly activity = new ActivityTracker();
  /** The rendered screen; after the exit it keeps the final screen (see ScreenModel.close). */
  readonly screen: ScreenModel;
  readonly exited: Promise<number>;

  private _cols: number;
  private _rows: number;
  private _exitCode: number | null = null;
  /** Set as soon as node-pty reports the exit: the PTY fd is gone even while output drains. */
  private ptyClosed = false;
  private lastDataAt = 0;
  private lastJudgedMeaningfulAt = Number.NEGATIVE_INFINITY;
  private lastViewerPumpAt = 0;
  /** Ring end offset at the last viewer pump: how much output a pending batch holds. */
  private pumpedUpTo = 0;
  private viewerPumpTimer: NodeJS.Timeout | undefined;
  private readonly outputListeners = new Set<OutputListener>();
  private readonly exitListeners = new Set<ExitListener>();
  private readonly viewers = new Set<RingViewer>();
  private resolveExited!: (code: number) => void;
  /** Whether the PTY's last bytes are read before node-pty closes it (see guardPtyTail). */
  private readonly tailGuarded: boolean;

  private constructor(
    private readonly term: PtyProcess,
    agentId: string,
    cols: number,
    rows: number,
    ringBytes: number,
  ) {
    this.agentId = agentId;
    this.pid = term.pid;
    this._cols = cols;
    this._rows = rows;
    this.ring = new OutputRing(ringBytes);
    this.screen = new ScreenModel(this.ring, cols, rows);
    this.exited = new Promise((resolveExited) => (this.resolveExited = resolveExited));
    // With encoding null node-pty hands us Buffers; its typings still say string.
    term.onData((data: string | Buffer) => this.handleData(typeof data === "string" ? Buffer.from(data) : data));
    this.tailGuarded = this.guardPtyTail(term);
    term.onExit(({ exitCode, signal }) => {
      this.ptyClosed = true;
      void this.handleExit(signal ? 128 + signal : exitCode);
    });
  }

  /** Starts the program on a new PTY; throws SPAWN_FAILED when it cannot be started at all. */
  static spawn(opts: SpawnOptions): AgentSession {
    const cols = clampSize(opts.cols ?? 120);
    const rows = clampSize(opts.rows ?? 40);
    checkSpawnable(opts.file, opts.cwd, opts.env);
    let term: PtyProcess;
    try {
      term = (opts.spawnPty ?? spawnNodePty)(opts.file, opts.args, { name: opts.env.TERM ?? "xterm-256color", cols, rows, cwd: opts.cwd, env: opts.env });
    } catch (err) {
      throw new PuError("SPAWN_FAILED", `cannot start ${opts.file}: ${(err as Error).message}`, { cause: err });
    }
    return new AgentSession(term, opts.agentId, cols, rows, opts.ringBytes ?? DEFAULT_RING_BYTES);
  }

  get cols(): number {
    return this._cols;
  }

  get rows(): number {
    return this._rows;
  }

  /** The exit code (128 + signal when killed by a signal); null while running. */
  get exitCode(): number | null {
    return this._exitCode;
  }

  /** Called after each chunk has been appended to the ring; returns an unsubscribe function. */
  onOutput(cb: OutputListener): () => void {
    this.outputListeners.add(cb);
    return () => this.outputListeners.delete(cb);
  }

  /** Called once when the process has exited and its last output is in the ring. */
  onExit(cb: ExitListener): () => void {
    if (this._exitCode !== null) {
      const code = this._exitCode;
      queueMicrotask(() => cb(code));
      return () => {};
    }
    this.exitListeners.add(cb);
    return () => this.exitListeners.delete(cb);
  }

  /**
   * When input last carried an Enter (epoch ms; 0 for never): a turn may have begun then, so
   * what the screen said before it is stale (see agentReadiness).
   */
  get submittedAt(): number {
    return this.lastSubmitAt;
  }

  /** A turn was started some other way than typing Enter (a prompt on the command line). */
  markSubmitted(at: number = Date.now()): void {
    this.lastSubmitAt = at;
  }

  /**
   * Called on a later tick (never inside write) after input carried an Enter: the status may
   * change with no output at all (an Enter on an empty prompt).
   */
  onSubmit(cb: () => void): () => void {
    this.submitListeners.add(cb);
    return () => this.submitListeners.delete(cb);
  }

  private lastSubmitAt = 0;
  private readonly submitListeners = new Set<() => void>();

  write(data: Buffer | string): void {
    if (this.ptyClosed) return;
    if (typeof data === "string" ? data.includes("\r") : data.includes(CARRIAGE_RETURN)) {
      this.lastSubmitAt = Date.now();
      if (this.submitListeners.size > 0) setImmediate(() => this.submitListeners.forEach((listener) => listener()));
    }
    // node-pty's typings only admit strings, but its write stream passes Buffers through untouched.
    this.term.write(data as string);
  }

  /** The size each viewer asked for, keyed by its connection; the PTY follows the smallest. */
  private readonly viewerSizes = new Map<number, { cols: number; rows: number }>();

  /**
   * A viewer's window size. As in tmux, the smallest attached viewer wins (per dimension), so
   * nobody sees a screen wider than their window; sizes outside 1..MAX_TERMINAL_SIZE are clamped.
   */
  setViewerSize(viewerKey: number, cols: number, rows: number): void {
    this.viewerSizes.set(viewerKey, { cols: clampSize(cols), rows: clampSize(rows) });
    this.fitViewers();
  }

  /** A viewer left: the others decide the size again; with none left the last size stays. */
  dropViewerSize(viewerKey: number): void {
    if (this.viewerSizes.delete(viewerKey)) this.fitViewers();
  }

  private fitViewers(): void {
    const sizes = [...this.viewerSizes.values()];
    if (sizes.length === 0) return;
    this.resize(Math.min(...sizes.map((s) => s.cols)), Math.min(...sizes.map((s) => s.rows)));
  }

  resize(cols: number, rows: number): void {
    if (!Number.isInteger(cols) || !Number.isInteger(rows) || cols <= 0 || rows <= 0) {
      throw new PuError("INVALID_ARGUMENT", `invalid terminal size ${cols}x${rows}`);
    }
    cols = clampSize(cols);
    rows = clampSize(rows);
    if (this.ptyClosed) return;
    try {
      this.term.resize(cols, rows);
    } catch {
      // The process exited between our check and the ioctl; a resize no longer matters.
      return;
    }
    this._cols = cols;
    this._rows = rows;
    this.screen.resize(cols, rows);
  }

  /**
   * SIGTERM to the agent's process group, up to `graceMs` for the group to go,
   * then SIGKILL to whatever is left. Resolves with the exit code.
   */
  async kill({ graceMs = 5000 }: { graceMs?: number } = {}): Promise<number> {
    // Once the agent is gone for good its pid may be reused: signal nothing.
    if (this._exitCode !== null) return this._exitCode;
    const deadline = Date.now() + graceMs;
    killProcessGroup(this.pid, "SIGTERM");
    // Interactive shells ignore SIGTERM; a hang-up is how a closing terminal ends them
    // (and their jobs). Sent a moment later, so a program that honours SIGTERM still
    // reports 143, and a terminal agent stops at once instead of after the whole grace.
    const hangUp = setTimeout(() => {
      if (this._exitCode === null) killProcessGroup(this.pid, "SIGHUP");
    }, Math.min(HANGUP_AFTER_MS, graceMs));
    void this.exited.then(() => clearTimeout(hangUp));
    // Children of the agent get the same grace as the agent itself.
    let graceTimer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<false>((resolveGrace) => (graceTimer = setTimeout(() => resolveGrace(false), graceMs)));
    // The timer is cleared so a finished kill does not keep the event loop (a stopping daemon) alive.
    const leaderGone = await Promise.race([this.exited.then(() => true), graceOver]).finally(() => clearTimeout(graceTimer));
    const groupGone = leaderGone && (await waitForGroupGone(this.pid, deadline));
    if (!groupGone) killProcessTree(this.pid, "SIGKILL");
    const code = await this.exited;
    await waitForGroupGone(this.pid, Date.now() + 2000);
    return code;
  }

  /**
   * Lets go of everything: viewers are closed (without an exit event), listeners
   * dropped, and a process still running is killed outright so nothing is orphaned.
   * For shutdown after kill(); the ring stays readable.
   */
  dispose(): void {
    for (const viewer of [...this.viewers]) viewer.close();
    clearTimeout(this.viewerPumpTimer);
    this.viewerPumpTimer = undefined;
    this.outputListeners.clear();
    this.exitListeners.clear();
    this.submitListeners.clear();
    void this.screen.close();
    if (!this.ptyClosed) killProcessTree(this.pid, "SIGKILL");
  }

  /**
   * Attaches a viewer that is sent everything from `fromOffset` (default: all the
   * ring holds) and then live output. Sending starts on the next turn of the event
   * loop, so the caller can reply to the attach request first.
   */
  addViewer(fromOffset: number | undefined, sink: ViewerSink): Viewer {
    const start = Math.min(Math.max(fromOffset ?? this.ring.startOffset, this.ring.startOffset), this.ring.endOffset);
    const viewer = new RingViewer(this, sink, start, () => this.viewers.delete(viewer));
    this.viewers.add(viewer);
    setImmediate(() => viewer.start());
    return viewer;
  }

  get viewerCount(): number {
    return this.viewers.size;
  }

  /**
   * Whether the program asked for bracketed paste (`ESC[?2004h`) and has not turned it off:
   * then a prompt can be pasted as one piece, newlines included, without submitting early.
   */
  get bracketedPaste(): boolean {
    return this.bracketedPasteOn;
  }

  private bracketedPasteOn = false;

  private noteBracketedPaste(chunk: Buffer): void {
    // A sequence split across two reads is missed; the program sets the mode again at each prompt.
    let at = chunk.indexOf(BRACKETED_PASTE_MODE);
    while (at >= 0) {
      const final = chunk[at + BRACKETED_PASTE_MODE.length];
      if (final === 0x68 /* h */) this.bracketedPasteOn = true;
      else if (final === 0x6c /* l */) this.bracketedPasteOn = false;
      at = chunk.indexOf(BRACKETED_PASTE_MODE, at + 1);
    }
  }

  private handleData(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const now = Date.now();
    this.lastDataAt = now;
    const offset = this.ring.endOffset;
    this.ring.append(chunk);
    this.noteBracketedPaste(chunk);
    // Only noted here: the screen model parses the ring on its own timer (see ScreenModel).
    this.screen.noteOutput(now);
    // Judging output (tokenizing every line) is the costliest per-byte work on this path:
    // judged chunk by chunk it capped a flood at a fraction of PTY speed. Once a chunk has
    // proved meaningful the idle clock is reset, so the rest of a burst is only sampled:
    // idle time reads at most ACTIVITY_SAMPLE_MS high, and text skipped here is missing
    // from the tracker's screen memory, which at worst makes one later chunk count.
    if (now - this.lastJudgedMeaningfulAt >= ACTIVITY_SAMPLE_MS && this.activity.observe(chunk, now)) {
      this.lastJudgedMeaningfulAt = now;
    }
    for (const listener of this.outputListeners) {
      safely(() => listener(chunk, offset));
    }
    this.scheduleViewerPump(now, chunk.length);
  }

  /**
   * A PTY is read a few KiB at a time; sending each read as its own event cost a frame,
   * a socket write and a decode per 4 KiB. Small reads (echo, prompts, a redrawn line)
   * and output after a quiet spell go out at once; while large reads keep coming, what
   * arrives within VIEWER_BATCH_MS goes out together. A batch never grows past
   * VIEWER_BATCH_BYTES or a quarter of the ring, so waiting cannot cost an up-to-date
   * viewer any bytes.
   */
  private scheduleViewerPump(now: number, readBytes: number): void {
    if (this.viewers.size === 0) return;
    const batched = this.ring.endOffset - this.pumpedUpTo;
    if (
      readBytes < VIEWER_BATCH_MIN_READ_BYTES ||
      now - this.lastViewerPumpAt >= VIEWER_BATCH_MS ||
      batched >= Math.min(VIEWER_BATCH_BYTES, this.ring.capacity / 4)
    ) {
      clearTimeout(this.viewerPumpTimer);
      this.viewerPumpTimer = undefined;
      this.pumpViewers(now);
      return;
    }
    if (this.viewerPumpTimer) return;
    this.viewerPumpTimer = setTimeout(() => {
      this.viewerPumpTimer = undefined;
      this.pumpViewers(Date.now());
    }, VIEWER_BATCH_MS);
  }

  private pumpViewers(now: number): void {
    this.lastViewerPumpAt = now;
    this.pumpedUpTo = this.ring.endOffset;
    for (const viewer of this.viewers) viewer.pump();
  }

  /**
   * node-pty reports the exit only once its read stream over the PTY has closed, but
   * that stream can close with output still unread, which is then lost for good:
   * - libuv takes a hang-up plus a read shorter than its buffer for end of file,
   *   and a PTY hands out at most 4 KiB per read, so when a flooding agent exits the
   *   last few KiB are still in the kernel (node-pty issues #85 / #726);
   * - node-pty closes the stream itself 200 ms after the exit if it has not ended,
   *   which also cuts off a background job still writing to the terminal.
   * Both go through the stream's destroy(), so that is where the rest is read: the
   * file descriptor is still open there, and once the terminal's other side is shut
   * a read returns what is left and then EIO. While a leftover process still holds
   * the terminal open, the close is held back (see holdBackClose).
   * Returns false when node-pty's internals are not as expected (the tail is then
   * only waited for, as best effort, in handleExit).
   */
  private guardPtyTail(term: PtyProcess): boolean {
    const readSide = ptyReadSide(term);
    if (!readSide) return false;
    const { stream, fd } = readSide;
    const destroy = stream.destroy.bind(stream);
    let cancelHold: (() => void) | undefined;
    const close = (args: unknown[]): unknown => {
      cancelHold?.();
      cancelHold = undefined;
      this.readPtyTail(fd);
      return destroy(...args);
    };
    stream.destroy = (...args: unknown[]): unknown => {
      if (stream.destroyed) return destroy(...args);
      const terminalHeld = this.readPtyTail(fd) === "held";
      // Only node-pty's own close-after-exit comes while the stream is still live: an
      // end of file or a read error (an argument) means nothing more can come.
      if (!terminalHeld || stream.readableEnded || args.length > 0) return close(args);
      cancelHold ??= this.holdBackClose(() => close(args));
      return stream;
    };
    return true;
  }

  /**
   * The agent has exited but a process it left behind (one that ignores the hang-up,
   * or a job-control shell's background job) still has the terminal open: its output
   * is taken for as long as it keeps coming, then `close` is called once output has
   * been quiet for EXIT_DRAIN_QUIET_MS, and at the latest after EXIT_DRAIN_MAX_MS, so
   * such a process delays the agent's exit a little but never holds it back for ever.
   * Returns a function that cancels the hold (the stream ended by itself).
   */
  private holdBackClose(close: () => void): () => void {
    const heldSince = Date.now();
    let timer: NodeJS.Timeout;
    const check = () => {
      const now = Date.now();
      const quietSince = Math.max(this.lastDataAt, heldSince);
      if (now - quietSince >= EXIT_DRAIN_QUIET_MS || now - heldSince >= EXIT_DRAIN_MAX_MS) close();
      else timer = setTimeout(check, 100);
    };
    timer = setTimeout(check, 100);
    return () => clearTimeout(timer);
  }

  /** What the kernel still holds for the PTY, straight into the ring (see readPtyRemaining). */
  private readPtyTail(fd: number): "held" | "shut" {
    return readPtyRemaining(fd, TAIL_DRAIN_MAX_BYTES, (chunk) => this.handleData(chunk));
  }

  private async handleExit(code: number): Promise<void> {
    if (!this.tailGuarded) {
      // Without the guard node-pty can close the PTY before its last output has been
      // read; waiting for the data to go quiet at least saves what is already in flight.
      const drainUntil = Date.now() + 250;
      do {
        await sleep(20);
      } while (Date.now() - this.lastDataAt < 20 && Date.now() < drainUntil);
    }
    clearTimeout(this.viewerPumpTimer);
    this.viewerPumpTimer = undefined;
    this._exitCode = code;
    void this.screen.close();
    this.resolveExited(code);
    for (const listener of this.exitListeners) {
      safely(() => listener(code));
    }
    this.exitListeners.clear();
    this.outputListeners.clear();
    for (const viewer of this.viewers) viewer.pump();
  }
}

/** Runs a listener; one that throws is reported later, never in the data path. */
function safely(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    // A failing listener must not take the PTY's data path down with it.
    queueMicrotask(() => {
      throw err;
    });
  }
}

/** Signal number for a name, e.g. for tests comparing against 128 + n. */
export function signalNumber(name: NodeJS.Signals): number {
  return osConstants.signals[name];
}

/** The largest terminal side pu gives a PTY; a bigger window is clamped to it, never refused. */
export const MAX_TERMINAL_SIZE = 1000;

function clampSize(n: number): number {
  return Math.min(MAX_TERMINAL_SIZE, Math.max(1, Math.floor(n)));
}

const BRACKETED_PASTE_MODE = Buffer.from("\x1b[?2004");
