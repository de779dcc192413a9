// Packs pu's packages the way a release would (scripts/pack.sh, i.e. `pnpm pack`) and runs npm
// on the tarballs, for the install tests. The packages were built by the test pipeline
// (turbo builds every package before tests/), so packing does not build again.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../helpers/pu-sandbox.js";

const run = promisify(execFile);

export interface Tarballs {
  core: string;
  ipc: string;
  engine: string;
  cli: string;
  /** In install order. */
  all: string[];
}

export async function packAll(dest: string): Promise<Tarballs> {
  const { stdout } = await run("bash", [path.join(REPO_ROOT, "scripts/pack.sh"), dest, "--no-build"], { cwd: REPO_ROOT, maxBuffer: 1 << 20 });
  const all = stdout.trim().split("\n");
  const find = (name: string) => {
    const found = all.find((file) => path.basename(file).startsWith(`pu-${name}-`));
    if (found === undefined || !existsSync(found)) throw new Error(`scripts/pack.sh made no ${name} tarball (printed: ${stdout})`);
    return found;
  };
  return { core: find("core"), ipc: find("ipc"), engine: find("engine"), cli: find("cli"), all };
}

/**
 * The environment npm runs with: node-gyp builds node-pty against the distro's Node headers
 * (it cannot download them here). The variables pnpm sets for the test run itself (its own
 * store, lifecycle and package fields) are pnpm's, not npm's: they are dropped.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key) || key === "npm_config_nodedir") env[key] = value;
  if (env.npm_config_nodedir === undefined && existsSync("/usr/include/node/node.h")) env.npm_config_nodedir = "/usr";
  return { ...env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" };
}

export async function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  try {
    // Killed, not left behind, when it hangs (a registry it cannot reach retries for minutes).
    return await run("npm", args, { cwd, env, maxBuffer: 16 << 20, timeout: 240_000, killSignal: "SIGKILL" });
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`npm ${args.join(" ")} failed:\n${stderr.slice(-4000)}\n${stdout.slice(-2000)}`);
  }
}

export const TSC = path.join(REPO_ROOT, "node_modules/typescript/bin/tsc");
