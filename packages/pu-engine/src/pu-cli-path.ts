// Programs the daemon starts (git hooks, agent CLI hooks) call the pu CLI by absolute path:
// `PU_CLI_BIN` (set by the CLI when it starts the daemon), else the CLI package next to this
// one in the pu checkout.
import { statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The pu CLI entry to call, or undefined when none can be found. */
export function locatePuCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = [env.PU_CLI_BIN, path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../pu-cli/bin/pu")];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      if (statSync(candidate).isFile()) return path.resolve(candidate);
    } catch {
      // next
    }
  }
  return undefined;
}

/** The daemon's PATH with the pu CLI's directory first, for agents that call `pu` themselves. */
export function pathWithPuCli(): string {
  const cli = locatePuCli();
  return cli ? `${path.dirname(cli)}${path.delimiter}${process.env.PATH ?? ""}` : (process.env.PATH ?? "");
}
