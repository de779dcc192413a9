import { existsSync } from "node:fs";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { findProjectRoot, manifestPath } from "@pu/core/paths";

export { findProjectRoot };

export interface ProjectLookup {
  /** `--project DIR` */
  flag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * `--project DIR`, else `$PU_PROJECT_ROOT`, else the nearest ancestor of the cwd holding
 * `.pu/manifest.json` (the manifest, not a bare `.pu/`: `~/.pu` is PU_HOME, not a project).
 * An explicit root must be initialized too, so a typo fails here instead of at the daemon.
 */
export function resolveProjectRoot({ flag, env = process.env, cwd = process.cwd() }: ProjectLookup): string {
  const explicit = flag ?? (env.PU_PROJECT_ROOT || undefined);
  if (explicit !== undefined) {
    const root = path.resolve(cwd, explicit);
    if (!existsSync(manifestPath(root))) {
      throw new PuError("NOT_INITIALIZED", `no pu project at ${root}; run \`pu init\` there first`);
    }
    return root;
  }
  const found = findProjectRoot(cwd);
  if (found === undefined) {
    throw new PuError("NOT_INITIALIZED", `no pu project at or above ${path.resolve(cwd)}; run \`pu init\` first`);
  }
  return found;
}

/** Where `pu init` creates a project: `--project DIR` as given, else the git top level of the cwd. */
export async function resolveInitRoot({ flag, cwd = process.cwd() }: ProjectLookup): Promise<string> {
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
    throw new PuError("INVALID_ARGUMENT", `pu init needs a git repository; ${dir} is not inside one (run \`git init\` first)`);
  }
}
