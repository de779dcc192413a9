import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PU_BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "bin", "pu");

export interface PuRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `pu` bin (built dist) as a child process. */
export function runPu(args: string[], { cwd, env }: { cwd: string; env: Record<string, string> }): Promise<PuRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PU_BIN, ...args],
      { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
