// Finding, starting and stopping the `pu web` server for `pu web` and `pu web stop`. The server
// records where it listens and its per-start secret in `$PU_HOME/web.json` (0600); the CLI
// proves itself with that secret to get a one-time login link or to stop it. The link's token
// never goes on a command line (it would show in `ps`): it is printed, or put in a 0600 file
// the browser is pointed at.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PuError } from "@pu/core/errors";
import { ensurePuHome } from "@pu/core/paths";
import { hostAndPort, parseWebServerFile, webLogPath, webOpenPagePath, webOrigin, webServerFilePath, type WebServerFile } from "@pu/core/web-server-file";
import { isProcessAlive, waitForExit } from "./daemon-client.js";

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export interface WebStartOptions {
  port?: number | undefined;
  bind?: string | undefined;
  insecureBind?: boolean;
}

export interface WebServerRunning {
  url: string;
  port: number;
  pid: number;
  started: boolean;
}

/**
 * The command line of a living process, its arguments split; undefined when it is gone. /proc
 * where there is one, `ps` elsewhere (macOS), whose single line is split on spaces.
 */
function commandLineOf(pid: number): string[] | undefined {
  if (!isProcessAlive(pid)) return undefined;
  try {
    if (existsSync("/proc/self/cmdline")) return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return execFileSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim().split(" ");
  } catch {
    return undefined;
  }
}

/**
 * Is `pid` the pu-web server of this home? web.json outlives a server that was SIGKILLed, and its
 * pid may since name an unrelated process: that one must never be signalled (the daemon's pid
 * file is checked the same way, by its command line).
 */
function isWebServerOf(home: string, pid: number): boolean {
  const argv = commandLineOf(pid);
  if (!argv) return false;
  return argv.some((arg) => path.basename(arg) === "pu-web") && ` ${argv.join(" ")} `.includes(` --home ${home} `);
}

/** SIGTERM to a server that does not answer, if its pid still names it (checked again just before). */
function terminateWebServer(home: string, pid: number): void {
  if (isWebServerOf(home, pid)) process.kill(pid, "SIGTERM");
}

/** The server's record, or undefined when there is none or its process is gone (or is not pu-web). */
function readWebServerFile(home: string): WebServerFile | undefined {
  const filePath = webServerFilePath(home);
  let text: string;
  try {
    text = readFileSync(filePath, "utf8");
  } catch {
    return undefined;
  }
  const file = parseWebServerFile(text, filePath);
  return isWebServerOf(home, file.pid) ? file : undefined;
}

function postToServer(file: WebServerFile, route: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: file.host,
        port: file.port,
        path: route,
        method: "POST",
        headers: { host: hostAndPort(file.host, file.port), authorization: `Bearer ${file.secret}`, "content-length": 0 },
        timeout: 3000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new PuError("DAEMON_UNAVAILABLE", `pu web (pid ${file.pid}) answered ${res.statusCode}`));
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", (error) => reject(new PuError("DAEMON_UNAVAILABLE", `pu web (pid ${file.pid}) did not answer: ${error.message}`)));
    req.end();
  });
}

/** A fresh one-time login URL from the running server. */
async function loginUrl(file: WebServerFile): Promise<string> {
  const { token } = (await postToServer(file, "/cli/login-token")) as { token: string };
  return `${webOrigin(file.host, file.port)}/login?token=${encodeURIComponent(token)}`;
}

function serverBinPath(): string {
  const entry = fileURLToPath(import.meta.resolve("@pu/web/server-main"));
  return path.join(path.dirname(entry), "..", "bin", "pu-web");
}

/** Finds the running server (same settings) or starts one, and returns a login URL for it. */
export async function ensureWebServer(home: string, options: WebStartOptions): Promise<WebServerRunning> {
  ensurePuHome(home);
  const running = readWebServerFile(home);
  if (running) {
    const sameSettings = (options.port === undefined || options.port === running.port) && (options.bind === undefined || options.bind === running.host || running.listening.includes(options.bind));
    if (!sameSettings) {
      throw new PuError("INVALID_ARGUMENT", `pu web is already running on ${webOrigin(running.host, running.port)} (pid ${running.pid}); stop it first with \`pu web stop\``);
    }
    try {
      return { url: await loginUrl(running), port: running.port, pid: running.pid, started: false };
    } catch {
      // A server that does not answer is replaced below.
      terminateWebServer(home, running.pid);
      await waitForExit(running.pid, STOP_TIMEOUT_MS);
    }
  }
  const { spawn } = await import("node:child_process");
  const args = [serverBinPath(), "--home", home];
  if (options.port !== undefined) args.push("--port", String(options.port));
  if (options.bind !== undefined) args.push("--bind", options.bind);
  if (options.insecureBind) args.push("--insecure-bind");
  const log = openSync(webLogPath(home), "a", 0o600);
  let exited: number | null | undefined;
  let child;
  try {
    child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log], env: { ...process.env, PU_HOME: home } });
    child.on("error", () => undefined);
    child.on("exit", (code) => (exited = code));
    child.unref();
  } finally {
    closeSync(log);
  }
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    if (exited !== undefined) throw new PuError("INTERNAL", `pu web did not start (exit ${exited}): ${lastLogLine(home)}`);
    const file = readWebServerFile(home);
    if (file && file.pid === child.pid) return { url: await loginUrl(file), port: file.port, pid: file.pid, started: true };
  }
  throw new PuError("TIMEOUT", `pu web did not start within ${START_TIMEOUT_MS / 1000}s; see ${webLogPath(home)}`);
}

function lastLogLine(home: string): string {
  try {
    const lines = readFileSync(webLogPath(home), "utf8").trim().split("\n");
    return lines[lines.length - 1] ?? "";
  } catch {
    return "see web.log";
  }
}

/** Asks the server to stop and waits for its process to end. */
export async function stopWebServer(home: string): Promise<{ wasRunning: boolean; pid?: number }> {
  const file = readWebServerFile(home);
  if (!file) return { wasRunning: false };
  try {
    await postToServer(file, "/cli/stop");
  } catch {
    terminateWebServer(home, file.pid);
  }
  if (!(await waitForExit(file.pid, STOP_TIMEOUT_MS))) throw new PuError("TIMEOUT", `pu web (pid ${file.pid}) did not exit within ${STOP_TIMEOUT_MS / 1000}s`);
  return { wasRunning: true, pid: file.pid };
}

/**
 * Opens the login link in the person's browser without putting the token on any command line:
 * a 0600 page under $PU_HOME redirects to it, and the browser is given that file's path. The
 * server removes the page once its token is spent (or when it stops).
 * Returns false where no browser can be opened (no display, no opener).
 */
export async function openInBrowser(home: string, url: string): Promise<boolean> {
  const opener = process.platform === "darwin" ? "open" : process.platform === "win32" ? undefined : "xdg-open";
  if (!opener || (process.platform === "linux" && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)) return false;
  const page = webOpenPagePath(home);
  const escaped = url.replace(/&/g, "&amp;").replace(/"/g, "&quot;");
  // A fresh 0600 file renamed over the old one: an existing page's looser mode is never kept,
  // and the browser never reads half a page.
  const temp = `${page}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, `<!doctype html><meta http-equiv="refresh" content="0;url=${escaped}"><a href="${escaped}">Open pu</a>\n`, { mode: 0o600, flag: "wx" });
    renameSync(temp, page);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  const { spawn } = await import("node:child_process");
  return new Promise((resolve) => {
    const child = spawn(opener, [page], { detached: true, stdio: "ignore" });
    child.on("error", () => resolve(false));
    child.on("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}
