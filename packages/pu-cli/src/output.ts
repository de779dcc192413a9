import { exitCodeFor, isPuError } from "@pu/core/errors";
import { CliUsageError } from "./usage-error.js";

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function colorEnabled(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

// JSON.stringify calls Buffer#toJSON before a replacer sees the value, so look at the
// holder's raw property: terminal bytes become (lossy) UTF-8 text, not arrays of numbers.
function bytesAsText(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("utf8");
  return value;
}

/** The one JSON document a `--json` command prints. */
export function writeJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, bytesAsText, 2) + "\n");
}

/** One line of an NDJSON stream (`status --watch --json`, `logs --follow --json`). */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value, bytesAsText) + "\n";
}

export function writeJsonLine(value: unknown): void {
  process.stdout.write(jsonLine(value));
}

export function writeLine(text = ""): void {
  process.stdout.write(text + "\n");
}

export function writeNote(text: string): void {
  process.stderr.write(text + "\n");
}

interface DescribedError {
  code: string;
  message: string;
  exitCode: number;
  details?: Record<string, unknown>;
}

function describeError(error: unknown): DescribedError {
  if (error instanceof CliUsageError) return { code: "INVALID_ARGUMENT", message: error.message, exitCode: EXIT_USAGE };
  if (isPuError(error)) {
    return { code: error.code, message: error.message, exitCode: exitCodeFor(error.code), ...(error.details ? { details: error.details } : {}) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: "INTERNAL", message, exitCode: EXIT_FAILURE };
}

/** Reports a failure the pu way: one line on stderr, the error document on stdout with --json; returns the exit code. */
export function reportError(error: unknown, json: boolean): number {
  const described = describeError(error);
  const oneLine = described.message.trim().replace(/\s*\n\s*/g, "; ");
  process.stderr.write(`pu: ${oneLine}\n`);
  if (json) writeJson({ error: { code: described.code, message: oneLine, ...(described.details ? { details: described.details } : {}) } });
  return described.exitCode;
}
