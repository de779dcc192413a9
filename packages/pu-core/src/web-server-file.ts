// `$PU_HOME/web.json`: where the running `pu web` server listens and the secret the CLI proves
// itself with when it asks that server for a login link or to stop. Written by the server
// alone (mode 0600, temp file + rename), read by `pu web` / `pu web stop` / `pu daemon stop`.
import { join } from "node:path";
import { z } from "zod";
import { parseJsonText } from "./json-state.js";

export const WebServerFileSchema = z.object({
  version: z.literal(1),
  pid: z.number().int().positive(),
  /** The address the page is served on (loopback unless started with --insecure-bind). */
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  /** Every address the server listens on (127.0.0.1 and ::1 by default). */
  listening: z.array(z.string()),
  /** Per-start secret, base64url: only the CLI (same user, this file) can mint login links with it. */
  secret: z.string().min(32),
  startedAt: z.string(),
});
export type WebServerFile = z.infer<typeof WebServerFileSchema>;

/** The names `pu web` serves on by default, and the only ones `--bind` takes without `--insecure-bind`. */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "::1", "localhost"];

export function webServerFilePath(home: string): string {
  return join(home, "web.json");
}

/**
 * The redirect to a login link that `pu web` points the browser at (so the token is never on a
 * command line). 0600; the server removes it once its token is spent, and when it stops.
 */
export function webOpenPagePath(home: string): string {
  return join(home, "web-open.html");
}

/** The server's own log (never holds a token or a secret). */
export function webLogPath(home: string): string {
  return join(home, "web.log");
}

export function parseWebServerFile(text: string, filePath: string): WebServerFile {
  return parseJsonText(WebServerFileSchema, text, filePath, "CONFIG_ERROR");
}

/** `HOST:PORT` as a browser writes it in a Host header or an origin: an IPv6 literal in brackets. */
export function hostAndPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** `http://HOST:PORT` with an IPv6 literal in brackets. */
export function webOrigin(host: string, port: number): string {
  return `http://${hostAndPort(host, port)}`;
}
