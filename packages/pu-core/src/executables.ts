// Finding a program the way exec would, without a shell (the daemon's launcher checks an
// agent's program before starting it; `pu dash` looks for notify-send).
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { delimiter, resolve } from "node:path";

/**
 * Where `file` would be executed from: itself when it names a path (relative to `cwd`),
 * else the first executable regular file of that name on `envPath`. Undefined when none.
 */
export function findExecutable(file: string, cwd: string, envPath: string | undefined): string | undefined {
  const candidates = file.includes("/")
    ? [resolve(cwd, file)]
    : (envPath ?? "").split(delimiter).filter(Boolean).map((dir) => resolve(cwd, dir, file));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // next candidate
    }
  }
  return undefined;
}
