import path from "node:path";
import { PuError } from "@pu/core/errors";

export interface InitLookup {
  /** `--project DIR` */
  flag?: string | undefined;
  cwd?: string;
}

/** Where `pu init` creates a project: `--project DIR` as given, else the git top level of the cwd. */
export async function resolveInitRoot({ flag, cwd = process.cwd() }: InitLookup): Promise<string> {
  const dir = flag === undefined ? cwd : path.resolve(cwd, flag);
  // Only init needs git; keep child_process off every other command's start-up path.
  const { execFileSync } = await import("node:child_process");
  try {
    return execFileSync("git", ["rev-parse", "--show-toplevel"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    throw new PuError("INVALID_STATE", `pu init needs a git repository; ${dir} is not inside one (run \`git init\` first)`);
  }
}
