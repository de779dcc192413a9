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

export function run(argv: string[], timeoutMs: number, stdinFile?: string): Promise<ProbeRun> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: [stdinFile ? "pipe" : "ignore", "pipe", "pipe"] });
    if (stdinFile) {
      const source = createReadStream(stdinFile);
      source.on("error", () => child.stdin!.destroy());
      child.stdin!.on("error", () => source.destroy());
      source.pipe(child.stdin!);
    }
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: error.message, timedOut });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

/** The last line the transport wrote to stderr, as the one reason a person reads. */
export function lastLine(text: string): string {
  return text.trim().split("\n").filter(Boolean).pop()?.slice(0, 500) ?? "";
}

