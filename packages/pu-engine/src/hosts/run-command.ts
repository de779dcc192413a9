// One command run to completion with a deadline: what the host commands run through a transport
// (probe, install, mirror upkeep), stdout and stderr kept, a file optionally streamed to stdin.
import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";

export interface ProbeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** After the command exits, how long its pipes may stay open (held by something it left behind) before the answer is given anyway. */
const PIPES_AFTER_EXIT_MS = 1000;

export function run(argv: string[], timeoutMs: number, stdinFile?: string): Promise<ProbeRun> {
  return new Promise((resolve) => {
    // A process group of its own: on timeout everything the transport started goes with it (an
    // exec wrapper's `sleep`, a shell's children), not only the direct child — an orphan kept
    // the pipes open, and waiting for them to close made the deadline the orphan's.
    const child = spawn(argv[0]!, argv.slice(1), { stdio: [stdinFile ? "pipe" : "ignore", "pipe", "pipe"], detached: true });
    if (stdinFile) {
      const source = createReadStream(stdinFile);
      source.on("error", () => child.stdin!.destroy());
      child.stdin!.on("error", () => source.destroy());
      source.pipe(child.stdin!);
    }
    let stdout = "";
    let stderr = "";
    let settled = false;
    let afterExit: NodeJS.Timeout | undefined;
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const settle = (result: ProbeRun) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(afterExit);
      // Whatever still holds the pipes is not waited for (nor read) any more.
      child.stdout!.destroy();
      child.stderr!.destroy();
      child.stdin?.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group is gone already
      }
      settle({ code: null, stdout, stderr, timedOut: true });
    }, timeoutMs);
    child.on("error", (error) => settle({ code: null, stdout, stderr: error.message, timedOut: false }));
    // 'close' (the pipes drained) normally follows the exit at once; a background process the
    // command left holding them (an ssh master kept for sharing) must not hold the answer. It is
    // not killed: after a clean exit what the command started on purpose stays.
    child.on("exit", (code) => {
      afterExit = setTimeout(() => settle({ code, stdout, stderr, timedOut: false }), PIPES_AFTER_EXIT_MS);
    });
    child.on("close", (code) => settle({ code, stdout, stderr, timedOut: false }));
  });
}

/** The last line the transport wrote to stderr, as the one reason a person reads. */
export function lastLine(text: string): string {
  return text.trim().split("\n").filter(Boolean).pop()?.slice(0, 500) ?? "";
}
