// `pu web` for the tests: start it in a sandbox (its pid tracked like the daemon's), fresh
// login links, `pu web` opening a "browser", raw HTTP requests with chosen headers, and the
// Chromium the machine has.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import type { PuSandbox } from "./pu-sandbox.js";

export interface WebStarted {
  url: string;
  port: number;
  pid: number;
  started: boolean;
}

export async function startWeb(sb: PuSandbox, args: string[] = []): Promise<WebStarted> {
  const started = await sb.puJson<WebStarted>(["web", "--no-open", ...args]);
  sb.trackPid(started.pid);
  return started;
}

export function tokenOf(url: string): string {
  return new URL(url).searchParams.get("token") ?? "";
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request to 127.0.0.1:port with exactly these headers (Host included). */
export function rawRequest(port: number, method: string, pathAndQuery: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path: pathAndQuery, headers, setHost: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** The session cookie (`name=value`) from a login response. */
export function sessionCookie(res: RawResponse): string {
  const setCookie = res.headers["set-cookie"];
  const first = Array.isArray(setCookie) ? setCookie[0] : setCookie;
  return (first ?? "").split(";")[0] ?? "";
}

/** The session key a login response hands the page in its redirect's fragment (`/#pu-key=KEY`). */
export function sessionKeyOf(res: RawResponse): string {
  return /^\/#pu-key=([A-Za-z0-9_-]+)$/.exec(String(res.headers.location ?? ""))?.[1] ?? "";
}

/** Logs in with a fresh link; returns the cookie and the session's key. */
export async function login(sb: PuSandbox, port: number): Promise<{ cookie: string; key: string }> {
  const { url } = await startWeb(sb);
  const res = await rawRequest(port, "GET", `/login?token=${tokenOf(url)}`, { host: `127.0.0.1:${port}` });
  return { cookie: sessionCookie(res), key: sessionKeyOf(res) };
}

/**
 * `pu web` as a person runs it, with a display: it writes its redirect page and hands it to
 * `xdg-open`. The machine's opener would start a real browser; this one (first on PATH) writes
 * down the file it was given, for the test to load in Chromium exactly as a browser would.
 */
export async function openWeb(sb: PuSandbox): Promise<{ openedFile: string; stdout: string }> {
  const bin = path.join(sb.base, "opener-bin");
  const record = path.join(sb.base, "opened.txt");
  mkdirSync(bin, { recursive: true });
  writeFileSync(path.join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > '${record}'\n`);
  chmodSync(path.join(bin, "xdg-open"), 0o755);
  writeFileSync(record, "");
  const run = await sb.pu(["web"], { env: { PATH: `${bin}:${process.env.PATH ?? ""}`, DISPLAY: ":0" } });
  if (run.code !== 0) throw new Error(`pu web failed: ${run.stderr}`);
  sb.trackPid(readWebFile(sb.home).pid);
  const deadline = Date.now() + 5000;
  while (readFileSync(record, "utf8") === "" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return { openedFile: readFileSync(record, "utf8"), stdout: run.stdout };
}

const CHROMIUM_PATHS = [process.env.PU_TEST_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];

/** The machine's Chromium, or why there is none (CI installs it: .ci/run → scripts/ci-packages.sh). */
export function chromiumPath(): { path?: string; missing?: string } {
  const found = CHROMIUM_PATHS.find((p): p is string => !!p && existsSync(p));
  if (found) return { path: found };
  return { missing: "no Chromium on this machine (apt-get install chromium, or set PU_TEST_CHROMIUM)" };
}

export function readWebFile(home: string): { pid: number; port: number; secret: string; listening: string[] } {
  return JSON.parse(readFileSync(`${home}/web.json`, "utf8")) as { pid: number; port: number; secret: string; listening: string[] };
}
