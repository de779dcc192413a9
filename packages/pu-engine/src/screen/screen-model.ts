/**
 * What a person looking at an agent's terminal would see right now: its output run
 * through a headless xterm of the PTY's size.
 *
 * The PTY's data path only queues each chunk (no parsing there); the queue is parsed
 * on a short timer, one xterm write at a time. Parsing costs about as much CPU per byte
 * as everything else the daemon does with output, so under a flood the model parses
 * only the newest part of what piled up since the last parse (see feed): the screen a
 * flood leaves behind is its last lines, and a program that draws a screen (a TUI)
 * never writes anywhere near that fast.
 */
import { createHash } from "node:crypto";
import xterm from "@xterm/headless";

/** Queued output is parsed this long after the first unparsed chunk arrived. */
export const SCREEN_FLUSH_MS = 50;
/** When more than this is queued and unparsed, the oldest part is dropped... */
export const SCREEN_BACKLOG_MAX_BYTES = 256 * 1024;
/** ...down to this much (far more than any screen holds: 1000×1000 cells at most). */
export const SCREEN_BACKLOG_KEEP_BYTES = 64 * 1024;
/** Lines kept above the screen; nothing reads them, the screen is what matters. */
const SCROLLBACK_LINES = 0;
/** Codex reports its state in the stream itself: `ESC ] 7501 ; state=working:app=codex BEL`. */
const CODEX_STATE_OSC = 7501;
/** CAN: aborts any escape sequence the parser is in the middle of (used after dropping bytes). */
const CANCEL_SEQUENCE = 0x18;
const NEWLINE = 0x0a;

export interface ScreenCursor {
  /** Column, 0-based. */
  x: number;
  /** Row on the screen, 0-based from the top. */
  y: number;
}

/** The last OSC 7501 state report seen in the stream (`state=working|done|idle`). */
export interface ReportedState {
  state: string;
  /** The rest of the report's fields, e.g. `{ app: "codex" }`. */
  fields: Record<string, string>;
  /** When the chunk carrying it arrived (epoch ms). */
  at: number;
}

/** Everything the model knows at one moment, as plain data. */
export interface ScreenSnapshot {
  cols: number;
  rows: number;
  /** One string per screen row, top to bottom, trailing blanks removed. */
  lines: string[];
  cursor: ScreenCursor;
  /** The program switched to the alternate screen (full-screen TUIs do). */
  alternateScreen: boolean;
  /** The window title the program last set (OSC 0/2); empty when never set. */
  title: string;
  contentHash: string;
  /** When the visible text last changed (epoch ms); null while nothing was ever drawn. */
  lastContentChange: number | null;
  reportedState: ReportedState | null;
  /** Output bytes never parsed because a flood outran the model (see feed). */
  skippedBytes: number;
}

interface PendingResize {
  cols: number;
  rows: number;
}

type Pending = Buffer | PendingResize;

export class ScreenModel {
  private readonly term: InstanceType<typeof xterm.Terminal>;
  private readonly pending: Pending[] = [];
  /** Output bytes in `pending`. */
  private pendingBytes = 0;
  /** Arrival time of the newest chunk in `pending`. */
  private pendingNewestAt = 0;
  /** Bytes were dropped: the next parse starts at a line start, after cancelling any open sequence. */
  private resync = false;
  private writing = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly settleWaiters: (() => void)[] = [];
  private lines: string[];
  private hash: string;
  private changedAt: number | null = null;
  private reported: ReportedState | null = null;
  private windowTitle = "";
  private skipped = 0;
  /** Set once the agent has exited: the final screen, with the terminal itself released. */
  private final: ScreenSnapshot | undefined;
  private closing: Promise<void> | undefined;

  constructor(cols: number, rows: number) {
    this.term = new xterm.Terminal({ cols, rows, scrollback: SCROLLBACK_LINES, allowProposedApi: true, logLevel: "off" });
    this.term.parser.registerOscHandler(CODEX_STATE_OSC, (data) => {
      this.reported = parseStateReport(data, this.writingNewestAt);
      return true;
    });
    this.term.onTitleChange((title) => (this.windowTitle = title));
    this.lines = this.readLines();
    this.hash = hashLines(this.lines);
  }

  /** Arrival time of the newest chunk in the write being parsed. */
  private writingNewestAt = 0;

  /**
   * Queues a chunk of output (the caller must not change it afterwards). Constant time:
   * no parsing happens here. When a flood has queued more than SCREEN_BACKLOG_MAX_BYTES,
   * the oldest queued output is dropped down to SCREEN_BACKLOG_KEEP_BYTES.
   */
  feed(chunk: Buffer, now: number = Date.now()): void {
    if (this.final || this.closing || chunk.length === 0) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    this.pendingNewestAt = now;
    if (this.pendingBytes > SCREEN_BACKLOG_MAX_BYTES) this.dropOldest();
    this.armFlush();
  }

  private armFlush(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.pump();
    }, SCREEN_FLUSH_MS);
  }

  /** Follows the PTY's size; output queued before the resize is still parsed at the old size. */
  resize(cols: number, rows: number): void {
    if (this.final || this.closing) return;
    this.pending.push({ cols, rows });
    this.pump();
  }

  /** Resolves once everything fed so far has been parsed (the model is then current). */
  settle(): Promise<void> {
    if (this.final) return Promise.resolve();
    if (this.closing) return this.closing;
    if (!this.writing && this.pending.length === 0) return Promise.resolve();
    const settled = new Promise<void>((resolve) => this.settleWaiters.push(resolve));
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.pump();
    return settled;
  }

  /** Parses what is left, keeps the final screen and releases the terminal (the agent has exited). */
  close(): Promise<void> {
    this.closing ??= this.settle().then(() => {
      this.final = this.snapshot();
      this.term.dispose();
    });
    return this.closing;
  }

  get closed(): boolean {
    return this.final !== undefined;
  }

  get cols(): number {
    return this.final?.cols ?? this.term.cols;
  }

  get rowCount(): number {
    return this.final?.rows ?? this.term.rows;
  }

  /** The screen's rows as text, top to bottom, trailing blanks removed. */
  rows(): string[] {
    return this.final?.lines ?? this.lines;
  }

  get cursor(): ScreenCursor {
    if (this.final) return this.final.cursor;
    const buffer = this.term.buffer.active;
    return { x: buffer.cursorX, y: buffer.cursorY };
  }

  /** The lowest row holding any text, trimmed; empty when the screen is blank. */
  lastNonEmptyLine(): string {
    const lines = this.rows();
    for (let i = lines.length - 1; i >= 0; i--) {
      const text = lines[i]!.trim();
      if (text) return text;
    }
    return "";
  }

  /** A hash of the visible text (not colours or cursor), recomputed after each parse. */
  get contentHash(): string {
    return this.final?.contentHash ?? this.hash;
  }

  /** When the visible text last changed (epoch ms); null while the screen has stayed blank. */
  get lastContentChange(): number | null {
    return this.final ? this.final.lastContentChange : this.changedAt;
  }

  get reportedState(): ReportedState | null {
    return this.final ? this.final.reportedState : this.reported;
  }

  snapshot(): ScreenSnapshot {
    if (this.final) return this.final;
    return {
      cols: this.term.cols,
      rows: this.term.rows,
      lines: [...this.lines],
      cursor: this.cursor,
      alternateScreen: this.term.buffer.active.type === "alternate",
      title: this.windowTitle,
      contentHash: this.hash,
      lastContentChange: this.changedAt,
      reportedState: this.reported,
      skippedBytes: this.skipped,
    };
  }

  private dropOldest(): void {
    while (this.pendingBytes > SCREEN_BACKLOG_KEEP_BYTES) {
      const index = this.pending.findIndex((p) => Buffer.isBuffer(p));
      if (index < 0) break;
      const chunk = this.pending[index] as Buffer;
      const excess = this.pendingBytes - SCREEN_BACKLOG_KEEP_BYTES;
      if (chunk.length <= excess) {
        this.pending.splice(index, 1);
        this.pendingBytes -= chunk.length;
        this.skipped += chunk.length;
      } else {
        this.pending[index] = chunk.subarray(excess);
        this.pendingBytes -= excess;
        this.skipped += excess;
      }
      this.resync = true;
    }
  }

  /**
   * Starts parsing the queue up to its next resize (one xterm write at a time, so a
   * resize lands between the bytes drawn before it and those drawn after it).
   */
  private pump(): void {
    if (this.writing || this.final) return;
    while (this.pending.length > 0 && !Buffer.isBuffer(this.pending[0])) {
      const size = this.pending.shift() as PendingResize;
      this.term.resize(size.cols, size.rows);
      this.afterParse(Date.now());
    }
    const chunks: Buffer[] = [];
    while (this.pending.length > 0 && Buffer.isBuffer(this.pending[0])) chunks.push(this.pending.shift() as Buffer);
    if (chunks.length === 0) {
      for (const resolve of this.settleWaiters.splice(0)) resolve();
      return;
    }
    let data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    this.pendingBytes -= data.length;
    if (this.resync) {
      this.resync = false;
      data = startAtLine(data);
    }
    const newestAt = this.pendingNewestAt;
    this.writing = true;
    this.writingNewestAt = newestAt;
    this.term.write(data, () => {
      this.writing = false;
      this.afterParse(newestAt);
      // Output queued meanwhile waits for the flush timer, unless someone waits for it or a
      // resize is next (the timer may have fired while this write was being parsed).
      if (this.settleWaiters.length > 0 || (this.pending.length > 0 && !Buffer.isBuffer(this.pending[0]))) this.pump();
      else if (this.pending.length > 0) this.armFlush();
    });
  }

  private afterParse(newestAt: number): void {
    this.lines = this.readLines();
    const hash = hashLines(this.lines);
    if (hash !== this.hash) {
      this.hash = hash;
      this.changedAt = newestAt;
    }
  }

  private readLines(): string[] {
    const buffer = this.term.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < this.term.rows; y++) lines.push(buffer.getLine(buffer.baseY + y)?.translateToString(true) ?? "");
    return lines;
  }
}

/**
 * After dropped bytes: cancel whatever sequence the parser was in, and start at the next
 * line so no half-drawn line or half sequence is taken for text.
 */
function startAtLine(data: Buffer): Buffer {
  const newline = data.indexOf(NEWLINE);
  const rest = newline >= 0 ? data.subarray(newline + 1) : data;
  return Buffer.concat([Buffer.of(CANCEL_SEQUENCE), rest]);
}

/** `state=working:app=codex` → { state: "working", fields: { app: "codex" } }. */
export function parseStateReport(data: string, at: number): ReportedState | null {
  const fields: Record<string, string> = {};
  for (const part of data.split(/[:;]/)) {
    const eq = part.indexOf("=");
    if (eq > 0) fields[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  const state = fields.state;
  if (!state) return null;
  delete fields.state;
  return { state, fields, at };
}

function hashLines(lines: string[]): string {
  return createHash("sha1").update(lines.join("\n")).digest("hex").slice(0, 16);
}
