// Gates: a trigger's shell command whose exit code decides whether the sequence moves on.
// Gate commands come only from trigger files in `<root>/.pu/triggers` or `$PU_HOME/triggers`,
// which the user wrote, so running them through `/bin/sh -c` is the point, not a hole.
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { constants as osConstants } from "node:os";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import { puDir } from "@pu/core/paths";
import { setLongTimeout } from "@pu/core/long-timeout";
import type { GateRun } from "@pu/ipc/protocol";

/** Output kept per gate run (the tail: failures print their reason last). */
const GATE_OUTPUT_BYTES = 64 * 1024;
/** Gate runs kept per record file. */
const GATE_RECORDS_KEPT = 200;
/** After a timeout's SIGTERM, how long the gate's process group gets before SIGKILL. */
const GATE_KILL_GRACE_MS = 2000;

export interface GateCommand {
  command: string;
  cwd: string;
  timeoutSeconds: number;
  env?: Record<string, string>;
  /** Aborting kills the gate's process group (e.g. the agent exited mid-gate). */
  signal?: AbortSignal;
}

export interface GateOutcome {
  command: string;
  /** The shell's exit code (128 + signal when killed); null when it timed out or could not start. */
  exitCode: number | null;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** The last GATE_OUTPUT_BYTES of stdout and stderr, interleaved as written. */
  output: string;
  startedAt: string;
}

/** Signals the gate's process group only: its leader may be reaped already and its pid reused. */
function signalGroup(pgid: number | undefined, signal: NodeJS.Signals): void {
  if (pgid === undefined || pgid <= 1) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
}

/** Keeps only the last `limit` bytes written to it. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.chunks.length > 1 && this.bytes - (this.chunks[0]?.length ?? 0) >= this.limit) {
      this.bytes -= this.chunks.shift()?.length ?? 0;
    }
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString("utf8");
  }
}

/** Runs one gate command with `/bin/sh -c` in its own process group; never rejects. */
export function runGate(gate: GateCommand): Promise<GateOutcome> {
  const startedAt = new Date();
  const output = new TailBuffer(GATE_OUTPUT_BYTES);
  return new Promise<GateOutcome>((resolve) => {
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    const child = spawn("/bin/sh", ["-c", gate.command], {
      cwd: gate.cwd,
      env: { ...process.env, ...gate.env },
      // Its own group, so a timeout stops everything the gate started (test runners fork).
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const stopGroup = (): void => {
      signalGroup(child.pid, "SIGTERM");
      killTimer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), GATE_KILL_GRACE_MS);
    };
    const cancelTimeout = setLongTimeout(() => {
      timedOut = true;
      output.push(Buffer.from(`\n[pu: gate timed out after ${gate.timeoutSeconds}s; stopped]\n`));
      stopGroup();
    }, gate.timeoutSeconds * 1000);
    const onAbort = (): void => {
      aborted = true;
      stopGroup();
    };
    if (gate.signal?.aborted) onAbort();
    else gate.signal?.addEventListener("abort", onAbort, { once: true });

    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    let settled = false;
    const finish = (exitCode: number | null): void => {
      if (settled) return;
      settled = true;
      cancelTimeout();
      clearTimeout(killTimer);
      gate.signal?.removeEventListener("abort", onAbort);
      // Whatever the shell left running in its group must not outlive the gate.
      signalGroup(child.pid, "SIGKILL");
      resolve({
        command: gate.command,
        exitCode: timedOut ? null : exitCode,
        timedOut,
        aborted,
        durationMs: Date.now() - startedAt.getTime(),
        output: output.text(),
        startedAt: startedAt.toISOString(),
      });
    };
    child.on("error", (err) => {
      output.push(Buffer.from(`[pu: cannot run the gate: ${err.message}]\n`));
      finish(null);
    });
    // "close" (not "exit"): all output has been read by then.
    child.on("close", (code, signal) => finish(code ?? (signal ? 128 + osConstants.signals[signal] : null)));
  });
}

// ---- records ----------------------------------------------------------------

function gatesDir(projectRoot: string): string {
  return path.join(puDir(projectRoot), "gates");
}

/** One JSONL file per agent; git-hook gates (no agent) go to `hook-<event>.jsonl`. */
function gateRecordPath(projectRoot: string, key: string): string {
  return path.join(gatesDir(projectRoot), `${key}.jsonl`);
}

export function toGateRun(
  outcome: GateOutcome,
  fields: { agentId: string; triggerName: string; seqIndex: number; expectedExit: number },
): GateRun {
  return {
    agentId: fields.agentId,
    triggerName: fields.triggerName,
    seqIndex: fields.seqIndex,
    command: outcome.command,
    exitCode: outcome.exitCode,
    expectedExit: fields.expectedExit,
    passed: !outcome.timedOut && outcome.exitCode === fields.expectedExit,
    timedOut: outcome.timedOut,
    durationMs: outcome.durationMs,
    outputTail: outcome.output,
    startedAt: outcome.startedAt,
  };
}

// Appends to one file are serialized so trimming never races another append.
const writeQueues = new Map<string, Promise<void>>();

/** Appends a run; the file keeps the last GATE_RECORDS_KEPT runs (rewritten atomically when trimmed). */
export function appendGateRun(projectRoot: string, key: string, run: GateRun): Promise<void> {
  const file = gateRecordPath(projectRoot, key);
  const previous = writeQueues.get(file) ?? Promise.resolve();
  const next = previous.then(() => appendNow(file, run));
  const settled = next.catch(() => undefined);
  writeQueues.set(file, settled);
  void settled.then(() => {
    if (writeQueues.get(file) === settled) writeQueues.delete(file);
  });
  return next;
}

async function appendNow(file: string, run: GateRun): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  // 0600: gate output can hold anything the project's tests print; an older 0644 file is fixed here.
  await fs.appendFile(file, `${JSON.stringify(run)}\n`, { mode: 0o600 });
  await fs.chmod(file, 0o600);
  const lines = (await fs.readFile(file, "utf8")).split("\n").filter((line) => line.trim() !== "");
  if (lines.length <= GATE_RECORDS_KEPT) return;
  await writeFileAtomic(file, `${lines.slice(-GATE_RECORDS_KEPT).join("\n")}\n`, { fsync: true, mode: 0o600 });
}

/** Every recorded run, oldest first; lines that do not parse (a torn write) are skipped. */
export async function readGateRuns(projectRoot: string, key: string): Promise<GateRun[]> {
  let text: string;
  try {
    text = await fs.readFile(gateRecordPath(projectRoot, key), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const runs: GateRun[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      runs.push(JSON.parse(line) as GateRun);
    } catch {
      // skip
    }
  }
  return runs;
}

/** What an agent is told when its gate failed and it gets another try: the result and the output's tail. */
export function gateFixRequest(outcome: GateOutcome, expectedExit: number, attempt: number, attempts: number, tailBytes = 2000): string {
  const bytes = Buffer.from(outcome.output.trimEnd());
  const tail = bytes.subarray(Math.max(0, bytes.length - tailBytes)).toString("utf8");
  const result = outcome.timedOut ? "timed out" : `exited ${outcome.exitCode ?? "?"} (expected ${expectedExit})`;
  return [
    `The check \`${outcome.command}\` ${result} (attempt ${attempt} of ${attempts}).`,
    tail ? `Its output ends with:\n${tail}` : "It printed nothing.",
    "Please fix the cause; the check runs again when you are done.",
  ].join("\n");
}
