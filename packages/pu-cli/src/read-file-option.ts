import { readFileSync } from "node:fs";
import { PuError } from "@pu/core/errors";
import { CliUsageError } from "./usage-error.js";

/**
 * The text of a `--file` option; `-` is standard input, as everywhere else on a command line.
 * A file that is not there is NOT_FOUND (exit 3), like any other thing named that does not exist.
 */
export function readFileOption(file: string, option = "--file"): string {
  try {
    return readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && file !== "-") throw new PuError("NOT_FOUND", `cannot read ${option} ${file}: no such file`);
    const why = code ?? (error as Error).message;
    throw new CliUsageError(file === "-" ? `cannot read stdin: ${why}` : `cannot read ${option} ${file}: ${why}`);
  }
}
