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
        reject(new PuError("GIT_ERROR", `git ${args[0]} failed: ${gitReason(stderr, error.message).slice(0, 500)}`));
      },
    );
  });
}

/**
 * The line of git's stderr that says what went wrong: its first `fatal:` or `error:` line (the
 * prefix dropped), else its last line. The last line alone is often the tail of git's advice
 * ("and the repository exists."), which tells a person nothing.
 */
function gitReason(stderr: string, fallback: string): string {
  const lines = stderr.split("\n").map((line) => line.trim()).filter(Boolean);
  const reason = lines.find((line) => /^(fatal|error):/.test(line));
  if (reason !== undefined) return reason.replace(/^(fatal|error):\s*/, "");
  return lines.at(-1) ?? fallback;
}

/** `git push URL REFSPEC…` from `dir`. */
export function pushRefs(dir: string, url: string, refspecs: string[]): Promise<string> {
  return transfer(dir, ["push", "--quiet", "--no-verify", url, ...refspecs]);
}

/** `git fetch URL REFSPEC…` into `dir`. */
export function fetchRefs(dir: string, url: string, refspecs: string[]): Promise<string> {
  return transfer(dir, ["fetch", "--quiet", "--no-tags", url, ...refspecs]);
}
