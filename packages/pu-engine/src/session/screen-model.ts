/**
 * What a person looking at an agent's terminal would see right now: its output run
 * through a headless xterm of the PTY's size.
 *
 * The model holds no output of its own: it reads the agent's output ring. The PTY's
 * data path only tells it that more arrived (a timestamp and a timer, no parsing, no
 * copy, no reference kept); the new bytes are parsed on a short timer, one xterm write
 * at a time. Parsing costs about as much CPU per byte as everything else the daemon
 * does with output, so a parse takes at most the newest SCREEN_PARSE_MAX_BYTES: a flood
 * is parsed from its last lines (the screen a flood leaves behind), and a program that
 * draws a screen (a TUI) never writes anywhere near that much between two parses.
 */
import { createHash } from "node:crypto";
import xterm from "@xterm/headless";

/** New output is parsed this long after it arrived... */
const SCREEN_FLUSH_MS = 50;
/**
 * ...or this long while a flood outruns the model (the last parse had to skip bytes): a
 * flooding program is busy whatever its screen says, and each parse costs about the same
 * however much was skipped, so parsing less often is what makes a flood cheap.
 */
const SCREEN_FLOOD_FLUSH_MS = 250;
/**
 * One parse takes at most the newest this-many bytes: far more than a screen holds (a
 * full 120×40 redraw in colour is ~20 KiB), and ~1.5 ms of xterm's time.
 */
export const SCREEN_PARSE_MAX_BYTES = 64 * 1024;
/** Lines kept above the screen; nothing reads them, the screen is what matters. */
const SCROLLBACK_LINES = 0;
/** Codex reports its state in the stream itself: `ESC ] 7501 ; state=working:app=codex BEL`. */
const CODEX_STATE_OSC = 7501;
/** CAN: aborts any escape sequence the parser is in the middle of (used after skipping bytes). */
const CANCEL_SEQUENCE = 0x18;
const NEWLINE = 0x0a;

/** Where the output comes from: the agent's OutputRing (absolute byte offsets). */
export interface ScreenSource {
  readonly startOffset: number;
  readonly endOffset: number;
  /** A copy of up to maxBytes from fromOffset (clamped to what is held). */
  read(fromOffset: number, maxBytes: number): { data: Buffer; offset: number };
}

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
  /** When the output carrying it arrived (epoch ms; to the parse's batch). */
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
  /** Output bytes never parsed because a flood outran the model. */
  skippedBytes: number;
}

interface PendingResize {
  /** Output offset the resize happened at: bytes before it are parsed at the old size. */
  at: number;
  cols: number;
  rows: number;
}

interface SettleWaiter {
  upTo: number;
  resolve: () => void;
}

export class ScreenModel {
  private readonly term: InstanceType<typeof xterm.Terminal>;
  /** Output before this offset has been handed to xterm. */
  private parsedTo: number;
  private readonly resizes: PendingResize[] = [];
  /** Arrival time of the newest output noted. */
  private newestAt = 0;
  /** Arrival time of the newest output in the write being parsed. */
  private writingNewestAt = 0;
  /** Bytes were skipped: the next parse starts at a line start, after cancelling any open sequence. */
  private resync = false;
  /** The last parse started after skipped bytes (see SCREEN_FLOOD_FLUSH_MS). */
  private flooding = false;
  private writing = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly settleWaiters: SettleWaiter[] = [];
  private lines: string[];
  private hash: string;
  private changedAt: number | null = null;
  private reported: ReportedState | null = null;
  private windowTitle = "";
  private skipped = 0;
  /** Set once the agent has exited: the final screen, with the terminal itself released. */
  private final: ScreenSnapshot | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly source: ScreenSource,
    cols: number,
    rows: number,
  ) {
    this.parsedTo = source.endOffset;
    this.term = new xterm.Terminal({ cols, rows, scrollback: SCROLLBACK_LINES, allowProposedApi: true, logLevel: "off" });
    this.term.parser.registerOscHandler(CODEX_STATE_OSC, (data) => {
      this.reported = parseStateReport(data, this.writingNewestAt);
      return true;
    });
    this.term.onTitleChange((title) => (this.windowTitle = title));
    this.lines = this.readLines();
    this.hash = hashLines(this.lines);
  }

  /**
   * More output is in the source. Constant time, and all the PTY's data path does for
   * the screen: the bytes are parsed later, on a timer.
   */
  noteOutput(now: number = Date.now()): void {
    if (this.final || this.closing) return;
    this.newestAt = now;
    this.armFlush();
  }

  private armFlush(): void {
    this.flushTimer ??= setTimeout(
      () => {
        this.flushTimer = undefined;
        this.pump();
      },
      this.flooding ? SCREEN_FLOOD_FLUSH_MS : SCREEN_FLUSH_MS,
    );
  }

  /** Follows the PTY's size; output that arrived before the resize is still parsed at the old size. */
  resize(cols: number, rows: number): void {
    if (this.final || this.closing) return;
    this.resizes.push({ at: this.source.endOffset, cols, rows });
    this.pump();
  }

  /** Resolves once all output the source holds now has been parsed (the model is then current). */
  settle(): Promise<void> {
    if (this.final) return Promise.resolve();
    if (this.closing) return this.closing;
    const upTo = this.source.endOffset;
    if (!this.writing && this.parsedTo >= upTo && this.resizes.length === 0) return Promise.resolve();
    const settled = new Promise<void>((resolve) => this.settleWaiters.push({ upTo, resolve }));
    this.pump();
    return settled;
  }

  /** Parses what is left, keeps the final screen and releases the terminal (the agent has exited). */
  close(): Promise<void> {
    this.closing ??= this.settle().then(() => {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
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

  /**
   * Hands xterm the next stretch of unparsed output: up to the next resize (so a resize
   * lands between the bytes drawn before it and those drawn after it), and at most
   * SCREEN_PARSE_MAX_BYTES of its newest bytes. One write at a time.
   */
  private pump(): void {
    if (this.writing || this.final) return;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const newestAt = this.newestAt;
    let resized = false;
    for (;;) {
      const next = this.resizes[0];
      if (next && next.at <= this.parsedTo) {
        this.resizes.shift();
        this.term.resize(next.cols, next.rows);
        resized = true;
        continue;
      }
      const end = next ? next.at : this.source.endOffset;
      if (end <= this.parsedTo) break;
      const oldest = Math.max(this.source.startOffset, end - SCREEN_PARSE_MAX_BYTES);
      if (this.parsedTo < oldest) {
        this.skipped += Math.min(oldest, end) - this.parsedTo;
        this.parsedTo = Math.min(oldest, end);
        this.resync = true;
        continue;
      }
      let data = this.source.read(this.parsedTo, end - this.parsedTo).data;
      this.parsedTo += data.length;
      this.flooding = this.resync;
      if (this.resync) {
        this.resync = false;
        data = startAtLine(data);
      }
      this.writing = true;
      this.writingNewestAt = newestAt;
      this.term.write(data, () => {
        this.writing = false;
        this.afterParse(newestAt);
        // Output that arrived meanwhile waits for a flush timer, unless someone waits for it.
        if (this.settleWaiters.length > 0 || this.resizes.length > 0) this.pump();
        else if (this.parsedTo < this.source.endOffset) this.armFlush();
      });
      return;
    }
    if (resized) this.afterParse(Date.now());
    this.resolveSettled();
  }

  private resolveSettled(): void {
    for (let i = this.settleWaiters.length - 1; i >= 0; i--) {
      const waiter = this.settleWaiters[i]!;
      if (this.parsedTo >= waiter.upTo) {
        this.settleWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  private afterParse(newestAt: number): void {
    this.lines = this.readLines();
    const hash = hashLines(this.lines);
    const reportedBefore = this.reportedSeen;
    this.reportedSeen = this.reported;
    if (hash === this.hash && reportedBefore === this.reported) return;
    if (hash !== this.hash) {
      this.hash = hash;
      this.changedAt = newestAt;
    }
    for (const listener of this.changeListeners) listener();
  }

  /** Calls `listener` after each parse that changed the visible text or the reported state. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private readonly changeListeners = new Set<() => void>();
  /** The reported state as of the last change notice. */
  private reportedSeen: ReportedState | null = null;

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
function parseStateReport(data: string, at: number): ReportedState | null {
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
