import { readFileSync } from "node:fs";
import { CliUsageError } from "./usage-error.js";

/** The text of a `--file` option; `-` is standard input, as everywhere else on a command line. */
export function readFileOption(file: string, option = "--file"): string {
  try {
    return readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new CliUsageError(file === "-" ? `cannot read stdin: ${why}` : `cannot read ${option} ${file}: ${why}`);
  }
}
