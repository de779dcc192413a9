// Meaningful-output detection for idle time (AL-001's "output inactivity"). TUIs keep
// writing while they wait: spinners, elapsed-time counters, cursor dances, title
// updates. Only output that shows something new on screen counts as activity.
//
// A chunk is split into line segments:
//  - after a newline: new content, meaningful if it has any visible non-spinner text;
//  - after a carriage return, backspace, or cursor positioning (a redraw): meaningful
//    only if its text, ignoring digits, whitespace and spinner glyphs, is not one of
//    the lines recently on screen;
//  - at the start of a chunk: appended to the current line, meaningful if that
//    changes the line beyond digits/spinner glyphs.
// Once a chunk moves the cursor up or to an absolute position (a full-frame redraw,
// as Ink-based TUIs do), every later segment of that chunk is treated as a redraw.

const RECENT_LINES_LIMIT = 256;
const MAX_LINE_CHARS = 4096;

// Glyphs that animate in place: braille spinners, the star/dot spinners Claude and
// others use, classic |/-\, bars, arrows, circle quarters, and ellipsis dots.
const SPINNER_GLYPHS = /[\u2800-\u28FF✻✶✳✢✽✺✹✸✷✵✴·•∙●○◐◓◑◒◴◷◶◵◰◳◲◱▖▘▝▗▁▂▃▄▅▆▇█▉▊▋▌▍▎▏←↖↑↗→↘↓↙◢◣◤◥⏺*|/\\\-.…⋯]/gu;
const DIGITS = /\p{Nd}/gu;
const WHITESPACE = /\s/gu;

type Segment = { kind: "continue" | "newline" | "redraw"; text: string };

interface Tokenized {
  segments: Segment[];
  /** An escape sequence cut off at the end of the chunk; it belongs to the next one. */
  pending: string;
}

/** CSI final bytes that move the cursor to another line or absolute position. */
const CSI_REPOSITION = new Set(["A", "B", "E", "F", "H", "f", "d", "J", "u", "r", "S", "T", "L", "M"]);
/** CSI final bytes that move within the current line or erase it. */
const CSI_LINE_REDRAW = new Set(["G", "K", "D", "X", "P", "`"]);

function tokenize(text: string): Tokenized {
  const segments: Segment[] = [{ kind: "continue", text: "" }];
  let repositioned = false;
  const startSegment = (kind: Segment["kind"]): void => {
    segments.push({ kind: repositioned && kind === "newline" ? "redraw" : kind, text: "" });
  };
  const appendText = (s: string): void => {
    const current = segments[segments.length - 1] as Segment;
    if (current.text.length < MAX_LINE_CHARS) current.text += s;
  };

  let i = 0;
  while (i < text.length) {
    const ch = text[i] as string;
    const code = ch.charCodeAt(0);
    if (ch === "\x1b") {
      const next = text[i + 1];
      if (next === undefined) return { segments, pending: text.slice(i) };
      if (next === "[") {
        const match = /^\x1b\[[0-?]*[ -/]*([@-~])/.exec(text.slice(i, i + 64));
        if (!match) {
          // Unterminated (cut at the chunk end) or garbage: keep it only if it could still complete.
          if (/^\x1b\[[0-?]*[ -/]*$/.test(text.slice(i))) return { segments, pending: text.slice(i) };
          i += 2;
          continue;
        }
        const final = match[1] as string;
        if (CSI_REPOSITION.has(final)) {
          repositioned = true;
          startSegment("redraw");
        } else if (CSI_LINE_REDRAW.has(final)) {
          startSegment("redraw");
        } else if (final === "C") {
          appendText(" ");
        }
        i += match[0].length;
        continue;
      }
      if (next === "]" || next === "P" || next === "X" || next === "^" || next === "_") {
        // OSC / DCS / SOS / PM / APC: a string ended by BEL (OSC) or ST (ESC \).
        const rest = text.slice(i + 2);
        const end = /\x07|\x1b\\/.exec(rest);
        if (!end) return { segments, pending: text.slice(i) };
        i += 2 + end.index + end[0].length;
        continue;
      }
      if (next === "M" || next === "8") {
        // Reverse index / restore cursor: we are back somewhere already drawn.
        repositioned = true;
        startSegment("redraw");
        i += 2;
        continue;
      }
      const escape = /^\x1b[ -/]*[0-~]/.exec(text.slice(i, i + 8));
      if (!escape) {
        if (/^\x1b[ -/]*$/.test(text.slice(i))) return { segments, pending: text.slice(i) };
        i += 1;
        continue;
      }
      i += escape[0].length;
      continue;
    }
    if (ch === "\n") {
      startSegment("newline");
    } else if (ch === "\r") {
      if (text[i + 1] === "\n") {
        i += 1;
        startSegment("newline");
      } else {
        startSegment("redraw");
      }
    } else if (ch === "\b") {
      startSegment("redraw");
    } else if (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0)) {
      // Other control characters (BEL, tabs aside) draw nothing.
      if (ch === "\t") appendText(" ");
    } else {
      appendText(ch);
    }
    i += 1;
  }
  return { segments, pending: "" };
}

/** What a line looks like ignoring the parts that animate: digits, spinners, spacing. */
function lineSignature(text: string): string {
  return text.replace(SPINNER_GLYPHS, "").replace(DIGITS, "").replace(WHITESPACE, "");
}

function hasVisibleContent(text: string): boolean {
  return text.replace(SPINNER_GLYPHS, "").replace(WHITESPACE, "") !== "";
}

interface ScreenMemory {
  currentLine: string;
  recent: Set<string>;
}

function remember(memory: ScreenMemory, signature: string): void {
  if (signature === "") return;
  memory.recent.delete(signature);
  memory.recent.add(signature);
  if (memory.recent.size > RECENT_LINES_LIMIT) {
    const oldest = memory.recent.values().next().value;
    if (oldest !== undefined) memory.recent.delete(oldest);
  }
}

/** Applies the segments to the screen memory; true if any of them showed something new. */
function absorb(memory: ScreenMemory, segments: Segment[]): boolean {
  let meaningful = false;
  for (const segment of segments) {
    if (segment.kind === "continue") {
      const before = lineSignature(memory.currentLine);
      memory.currentLine = (memory.currentLine + segment.text).slice(-MAX_LINE_CHARS);
      const after = lineSignature(memory.currentLine);
      if (after !== before && !memory.recent.has(after) && hasVisibleContent(segment.text)) meaningful = true;
      remember(memory, after);
    } else if (segment.kind === "newline") {
      memory.currentLine = segment.text;
      if (hasVisibleContent(segment.text)) meaningful = true;
      remember(memory, lineSignature(segment.text));
    } else {
      memory.currentLine = segment.text;
      const signature = lineSignature(segment.text);
      if (signature !== "" && !memory.recent.has(signature)) meaningful = true;
      remember(memory, signature);
    }
  }
  return meaningful;
}

function decode(chunk: Uint8Array | string): string {
  return typeof chunk === "string" ? chunk : new TextDecoder("utf-8", { fatal: false }).decode(chunk);
}

/**
 * Whether `chunk` shows something new, given the line the cursor was on before it
 * (`previousLine`). Stateless; ActivityTracker keeps richer memory across chunks.
 */
export function isMeaningfulOutput(chunk: Uint8Array | string, previousLine = ""): boolean {
  const memory: ScreenMemory = { currentLine: previousLine, recent: new Set() };
  remember(memory, lineSignature(previousLine));
  return absorb(memory, tokenize(decode(chunk)).segments);
}

/** Tracks when an agent last produced meaningful output, chunk by chunk. */
export class ActivityTracker {
  lastMeaningfulAt: number;
  private readonly decoder = new TextDecoder("utf-8", { fatal: false });
  private pending = "";
  private readonly memory: ScreenMemory = { currentLine: "", recent: new Set() };

  /** Starts counting idle time from `now` (usually the spawn). */
  constructor(now: number = Date.now()) {
    this.lastMeaningfulAt = now;
  }

  /** Feeds one chunk of PTY output; returns true (and resets idle time) if it was meaningful. */
  observe(chunk: Uint8Array, now: number = Date.now()): boolean {
    const text = this.pending + this.decoder.decode(chunk, { stream: true });
    const { segments, pending } = tokenize(text);
    // A runaway unterminated sequence must not grow without bound.
    this.pending = pending.length > 4096 ? "" : pending;
    const meaningful = absorb(this.memory, segments);
    if (meaningful) this.lastMeaningfulAt = now;
    return meaningful;
  }

  idleSeconds(now: number = Date.now()): number {
    return Math.max(0, (now - this.lastMeaningfulAt) / 1000);
  }
}
