// Pushing to and fetching from a host's mirror with git's own protocol over the host's transport
// (an `ext::` URL from pu-core's hostGitUrl). git runs with the `ext` helper allowed for this one
// command only, never prompting; simple-git would refuse the helper, so these run git directly.
import { execFile } from "node:child_process";
import { PuError } from "@pu/core/errors";

const TRANSFER_TIMEOUT_MS = 10 * 60_000;

function transfer(dir: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["-c", "protocol.ext.allow=always", ...args],
      { cwd: dir, env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }, timeout: TRANSFER_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const said = stderr.trim().split("\n").filter(Boolean).pop() ?? error.message;
        reject(new PuError("GIT_ERROR", `git ${args[0]} failed: ${said.slice(0, 500)}`));
      },
    );
  });
}

/** `git push URL REFSPEC…` from `dir`. */
export function pushRefs(dir: string, url: string, refspecs: string[]): Promise<string> {
  return transfer(dir, ["push", "--quiet", "--no-verify", url, ...refspecs]);
}

/** `git fetch URL REFSPEC…` into `dir`. */
export function fetchRefs(dir: string, url: string, refspecs: string[]): Promise<string> {
  return transfer(dir, ["fetch", "--quiet", "--no-tags", url, ...refspecs]);
}
