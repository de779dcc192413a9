// Where pu keeps things: the user-level home ($PU_HOME, default ~/.pu) and the
// per-project `.pu/` directory. Tests always point PU_HOME at a temp dir.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { PuError } from "./errors.js";

export function puHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.PU_HOME;
  return fromEnv && fromEnv.trim() !== "" ? resolve(fromEnv) : join(homedir(), ".pu");
}

/**
 * Creates the home with mode 0700 if missing. An existing home that others can
 * write to (or that belongs to someone else) is refused: the daemon socket and
 * global definitions there would let another user drive our agents.
 */
export function ensurePuHome(home: string): void {
  try {
    mkdirSync(home, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new PuError("IO_ERROR", `cannot create pu home ${home}: ${(error as Error).message}`, { cause: error });
  }
  const info = statSync(home);
  if (!info.isDirectory()) {
    throw new PuError("CONFIG_ERROR", `pu home ${home} is not a directory`);
  }
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new PuError("CONFIG_ERROR", `pu home ${home} is owned by uid ${info.uid}, not by you (uid ${uid})`);
  }
  if ((info.mode & 0o022) !== 0) {
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    throw new PuError(
      "CONFIG_ERROR",
      `pu home ${home} is group- or world-writable (mode ${mode}); run \`chmod 700 ${home}\` or set PU_HOME elsewhere`,
    );
  }
}

/** Unix socket paths are limited by `sun_path` (108 bytes on Linux, 104 on macOS, with the NUL). */
export const MAX_SOCKET_PATH_BYTES = process.platform === "linux" ? 107 : 103;

/**
 * The daemon's socket. A longer path is refused here, before anything listens or connects:
 * the OS would otherwise cut it short, putting the socket somewhere outside the home.
 */
export function socketPath(home: string): string {
  const path = join(home, "daemon.sock");
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new PuError(
      "CONFIG_ERROR",
      `the pu daemon's socket path ${path} is ${bytes} bytes, over this system's limit of ${MAX_SOCKET_PATH_BYTES} for a Unix socket; set PU_HOME to a shorter directory`,
    );
  }
  return path;
}

export function pidPath(home: string): string {
  return join(home, "daemon.pid");
}

export function logPath(home: string): string {
  return join(home, "daemon.log");
}

/** `projects.json`: the projects the daemon has served (for recovery and schedules). */
export function projectsPath(home: string): string {
  return join(home, "projects.json");
}

export const PU_DIR_NAME = ".pu";

export function puDir(root: string): string {
  return join(root, PU_DIR_NAME);
}

export function manifestPath(root: string): string {
  return join(puDir(root), "manifest.json");
}

export function configPath(root: string): string {
  return join(puDir(root), "config.yaml");
}

export function worktreesDir(root: string): string {
  return join(puDir(root), "worktrees");
}

/**
 * `$PU_HOME/hooks/<folder>-<hash>/`: the git hooks folder of one project's pu worktrees. It is in
 * the home, not the project, because git runs every hook in the folder a worktree points at and a
 * repository could otherwise carry hooks of its own there. Named like a host's mirror of the
 * project (`hostMirrorPath`): its folder name, then a hash of its path, so two projects named
 * alike never share one.
 */
export function projectHooksDir(home: string, projectRoot: string): string {
  const base = basename(projectRoot).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40) || "project";
  const hash = createHash("sha256").update(projectRoot).digest("hex").slice(0, 10);
  return join(home, "hooks", `${base}-${hash}`);
}

/**
 * The definition kinds, in one table that core, the protocol and the CLI all read: the
 * directory each lives in (under `.pu/` and `$PU_HOME`), its file extension, and how the
 * CLI names it (`pu prompt ...` manages templates).
 */
export const DEFINITION_KIND_TABLE = {
  template: { dir: "templates", ext: ".md", noun: "prompt", plural: "prompt templates" },
  agent: { dir: "agents", ext: ".yaml", noun: "agent", plural: "agent definitions" },
  swarm: { dir: "swarms", ext: ".yaml", noun: "swarm", plural: "swarms" },
  trigger: { dir: "triggers", ext: ".yaml", noun: "trigger", plural: "triggers" },
  schedule: { dir: "schedules", ext: ".yaml", noun: "schedule", plural: "schedules" },
} as const;

export type DefinitionKind = keyof typeof DEFINITION_KIND_TABLE;

export const DEFINITION_KINDS = Object.keys(DEFINITION_KIND_TABLE) as [DefinitionKind, ...DefinitionKind[]];

export function definitionDirName(kind: DefinitionKind): string {
  return DEFINITION_KIND_TABLE[kind].dir;
}

/**
 * The directory holding definitions of `kind`. `base` is either `{ projectRoot }`
 * (→ `<root>/.pu/<kind>s`), `{ home }` (→ `<home>/<kind>s`), or a string naming the
 * directory that directly contains the kind directories (the home, or a `.pu` dir).
 */
export function definitionsDir(
  base: string | { projectRoot: string } | { home: string },
  kind: DefinitionKind,
): string {
  const parent = typeof base === "string" ? base : "projectRoot" in base ? puDir(base.projectRoot) : base.home;
  return join(parent, definitionDirName(kind));
}

/** The nearest directory at or above `startDir` holding `.pu/manifest.json`. */
export function findProjectRoot(startDir: string): string | undefined {
  let dir = resolve(startDir);
  for (;;) {
    if (existsSync(manifestPath(dir))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export interface ProjectRootSources {
  /** `--project DIR` from the command line. */
  flag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * `--project DIR`, else `$PU_PROJECT_ROOT`, else the nearest ancestor of the cwd holding
 * `.pu/manifest.json` (the manifest, not a bare `.pu/`: `~/.pu` is PU_HOME, not a project).
 * An explicit root must be initialized too, so a typo fails here instead of at the daemon.
 */
export function resolveProjectRoot(sources: ProjectRootSources = {}): string {
  const cwd = sources.cwd ?? process.cwd();
  const env = sources.env ?? process.env;
  const explicit = sources.flag ?? (env.PU_PROJECT_ROOT || undefined);
  if (explicit !== undefined) {
    const root = resolve(cwd, explicit);
    if (!existsSync(manifestPath(root))) {
      throw new PuError("NOT_INITIALIZED", `no pu project at ${root}; run \`pu init\` there first`);
    }
    return root;
  }
  const found = findProjectRoot(cwd);
  if (found === undefined) {
    throw new PuError("NOT_INITIALIZED", `no pu project at or above ${resolve(cwd)}; run \`pu init\` first`);
  }
  return found;
}
