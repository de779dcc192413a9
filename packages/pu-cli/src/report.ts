// The one place a pu command's output goes through. A command hands its result (and how a
// person should see it) to the report; the report decides between text and the `--json`
// document, so no command branches on `--json` and every error looks the same.
import { exitCodeFor, isPuError } from "@pu/core/errors";
import { escapeControlCharacters } from "@pu/core/names";
import { colorEnabled } from "./output.js";
import { CliUsageError } from "./usage-error.js";

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

interface OutputStream {
  write(chunk: string | Uint8Array): boolean;
  once(event: "drain", listener: () => void): unknown;
  isTTY?: boolean;
}

/**
 * Where a report writes. `process` itself fits, and its stdout/stderr getters are only read
 * when something is written: bin/pu waits at exit for exactly the streams a run opened.
 */
export interface Stdio {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
}

/** What a command's human-readable answer is written with (stdout). */
export interface HumanOutput {
  /** `text` and a newline; control characters in it are shown as `\xNN` (line breaks and tabs kept). */
  line(text?: string): void;
  /** Bytes or text exactly as given (patches, terminal output, redraws). */
  write(raw: string | Uint8Array): void;
  /** stdout is a terminal. */
  readonly terminal: boolean;
  /** Colour is wanted (a terminal, no NO_COLOR). */
  readonly color: boolean;
}

interface ReportedError {
  code: string;
  message: string;
  exitCode: number;
  details?: Record<string, unknown>;
}

// JSON.stringify calls Buffer#toJSON before a replacer sees the value, so look at the
// holder's raw property: terminal bytes become (lossy) UTF-8 text, not arrays of numbers.
function bytesAsText(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("utf8");
  return value;
}

/** The code, one-line message, exit code and details pu reports for any thrown value. */
function describeError(error: unknown): ReportedError {
  if (error instanceof CliUsageError) return { code: "INVALID_ARGUMENT", message: oneLine(error.message), exitCode: EXIT_USAGE };
  if (isPuError(error)) {
    return { code: error.code, message: oneLine(error.message), exitCode: exitCodeFor(error.code), ...(error.details ? { details: error.details } : {}) };
  }
  return { code: "INTERNAL", message: oneLine(error instanceof Error ? error.message : String(error)), exitCode: EXIT_FAILURE };
}

function oneLine(message: string): string {
  return message.trim().replace(/\s*\n\s*/g, "; ");
}

/**
 * The one escaping rule of human output: whatever text pu prints as lines (names, titles, notes,
 * ids in errors: text that came from files and arguments) reaches the terminal with its control
 * characters shown as `\xNN`, so none can act on it (clear it, set its title…). Line breaks and
 * tabs stay. Raw bytes (logs, attach, diffs, pu's own colours and redraws) go through `write`.
 */
function printable(text: string): string {
  return text.split(/(\n|\t)/).map((part) => (part === "\n" || part === "\t" ? part : escapeControlCharacters(part))).join("");
}

/**
 * One command run's output: with `--json` exactly one JSON document on stdout (or one NDJSON
 * line per event for a stream), otherwise the text the command's `human` callback writes.
 * Notes and error lines go to stderr in both modes.
 */
export class Report {
  constructor(
    readonly json: boolean,
    private readonly stdio: Stdio = process,
  ) {}

  /** Prints the command's answer and returns `exitCode`, so a command can end with `return report.result(…)`. */
  result(value: unknown, human: (out: HumanOutput) => void, exitCode = 0): number {
    if (this.json) this.document(value);
    else human(this.out);
    return exitCode;
  }

  /**
   * One event of a stream: an NDJSON line with `--json`, else whatever `human` writes. Resolves
   * once stdout can take more, so a slow reader's backlog stays with the sender (the daemon).
   */
  async streamEvent(value: unknown, human: (out: HumanOutput) => void): Promise<void> {
    let full = false;
    const write = (chunk: string | Uint8Array) => {
      if (!this.stdio.stdout.write(chunk)) full = true;
    };
    if (this.json) write(JSON.stringify(value, bytesAsText) + "\n");
    else human(this.outputVia(write));
    if (full) await new Promise<void>((resolve) => this.stdio.stdout.once("drain", resolve));
  }

  /** A line on stderr, in both modes (warnings, progress, why something failed). */
  note(text: string): void {
    this.stdio.stderr.write(printable(text) + "\n");
  }

  /** Reports a failure the pu way: one line on stderr, the error document on stdout with `--json`; returns the exit code. */
  error(error: unknown): number {
    const { code, message, exitCode, details } = describeError(error);
    this.note(`pu: ${message}`);
    if (this.json) this.document({ error: { code, message, ...(details ? { details } : {}) } });
    return exitCode;
  }

  /** stdout for text outside a result: an interactive terminal session (attach), a redraw on a timer. */
  get out(): HumanOutput {
    return this.outputVia((raw) => void this.stdio.stdout.write(raw));
  }

  private document(value: unknown): void {
    this.stdio.stdout.write(JSON.stringify(value, bytesAsText, 2) + "\n");
  }

  private outputVia(write: (raw: string | Uint8Array) => void): HumanOutput {
    const stdout = () => this.stdio.stdout;
    return {
      line: (text = "") => write(printable(text) + "\n"),
      write,
      get terminal() {
        return Boolean(stdout().isTTY);
      },
      get color() {
        return colorEnabled(stdout());
      },
    };
  }
}
