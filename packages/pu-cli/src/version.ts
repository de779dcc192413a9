import { readFileSync } from "node:fs";

let cached: string | undefined;

/**
 * pu's version is the `@pu/cli` package's own, read from its package.json (next to `dist/`
 * in the workspace and in an installed package alike; the bundle's import.meta.url is
 * dist/pu.cjs). Read only when asked for (`--version`, the top-level help), so no other
 * command pays for the file read.
 */
export function cliVersion(): string {
  if (cached === undefined) {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: unknown };
    if (typeof manifest.version !== "string") throw new Error("@pu/cli's package.json has no version");
    cached = manifest.version;
  }
  return cached;
}
