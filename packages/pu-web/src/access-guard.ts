// Who may talk to the web server. Checked in this order on every request (docs/web.md):
//   1. Host must name this server (127.0.0.1, localhost, [::1] or the --bind address, with its
//      port): anything else is 403 before anything else is looked at, which is what defeats
//      DNS rebinding (a page on evil.example resolved to 127.0.0.1 still sends its own Host).
//   2. A WebSocket upgrade must carry an Origin of this server (403).
//   3. The page's own files (/, /assets/*) hold no secret and are served to anyone past 1–2.
//   4. Everything else needs the session cookie (HttpOnly, SameSite=Strict, got by trading a
//      one-time login token from `pu web`'s URL) AND the session's key: 401 otherwise. The cookie
//      alone is not enough because cookies are scoped by host, not port (RFC 6265 §8.5): every
//      other service on 127.0.0.1 the browser visits receives it. The key reaches the page once,
//      in the login redirect's URL fragment, and is sent back in a header (/api) or as a
//      WebSocket subprotocol — nothing another local service is ever given.
//   5. Every POST is same-site JSON (a cross-site form cannot send the key header either).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { hostAndPort } from "@pu/core/web-server-file";
import { KEY_HEADER, KEY_SUBPROTOCOL_PREFIX } from "./page/session-key.js";

/** A login link unused for this long stops working. */
const LOGIN_TOKEN_TTL_MS = 15 * 60_000;
/** Outstanding login links kept at most (the oldest is dropped). */
const MAX_LOGIN_TOKENS = 64;

export interface Session {
  /** Proves a request comes from the page that logged in, not just from a browser holding the cookie. */
  key: string;
  createdAt: number;
}

export interface NewSession {
  id: string;
  key: string;
}

const hash = (value: string): string => createHash("sha256").update(value).digest("base64url");

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(hash(a));
  const y = Buffer.from(hash(b));
  return timingSafeEqual(x, y);
}

/** `host:port` as a browser writes it in Host (IPv6 literals in brackets), lowercased. */
function hostWithPort(host: string, port: number): string {
  return hostAndPort(host, port).toLowerCase();
}

export class AccessGuard {
  /** Per server start; only `$PU_HOME/web.json` (0600) holds it, for `pu web` to mint login links. */
  readonly secret = randomBytes(32).toString("base64url");
  /** Cookies are per host, not per port: two servers (two PU_HOMEs) must not share one. */
  readonly cookieName: string;
  private readonly hosts: Set<string>;
  private readonly origins: Set<string>;
  /** Hash of each unused login token → when it expires. */
  private readonly loginTokens = new Map<string, number>();
  /** Hash of each session id → the session. */
  private readonly sessions = new Map<string, Session>();

  constructor(hostNames: readonly string[], port: number) {
    this.cookieName = `pu_session_${port}`;
    this.hosts = new Set(hostNames.map((h) => hostWithPort(h, port)));
    this.origins = new Set([...this.hosts].map((h) => `http://${h}`));
  }

  hostAllowed(req: IncomingMessage): boolean {
    const host = req.headers.host;
    return typeof host === "string" && this.hosts.has(host.toLowerCase());
  }

  /** For WebSocket upgrades: an Origin header naming this server, nothing else (a missing one included). */
  originAllowed(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    return typeof origin === "string" && this.origins.has(origin.toLowerCase());
  }

  /**
   * For state-changing requests, on top of the session key: an Origin, when the browser sends
   * one, must be this server's, and Fetch Metadata must not say cross-site.
   */
  requestFromThisSite(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    if (typeof origin === "string" && !this.origins.has(origin.toLowerCase())) return false;
    const site = req.headers["sec-fetch-site"];
    return site === undefined || site === "same-origin" || site === "none";
  }

  /** `Authorization: Bearer SECRET`: the CLI, which read web.json. */
  hasSecret(req: IncomingMessage): boolean {
    const auth = req.headers.authorization;
    const m = typeof auth === "string" ? /^Bearer (\S+)$/.exec(auth) : null;
    return m !== null && sameSecret(m[1]!, this.secret);
  }

  mintLoginToken(now = Date.now()): string {
    this.dropExpired(now);
    while (this.loginTokens.size >= MAX_LOGIN_TOKENS) this.loginTokens.delete(this.loginTokens.keys().next().value!);
    const token = randomBytes(24).toString("base64url");
    this.loginTokens.set(hash(token), now + LOGIN_TOKEN_TTL_MS);
    return token;
  }

  /** Trades an unused, unexpired login token for a new session (the token is spent either way). */
  redeemLoginToken(token: string, now = Date.now()): NewSession | undefined {
    this.dropExpired(now);
    const tokenHash = hash(token);
    if (!this.loginTokens.has(tokenHash)) return undefined;
    this.loginTokens.delete(tokenHash);
    const id = randomBytes(32).toString("base64url");
    const key = randomBytes(24).toString("base64url");
    this.sessions.set(hash(id), { key, createdAt: now });
    return { id, key };
  }

  /**
   * The session when the request has both its cookie and its key: the key in the `x-pu-key`
   * header, or — for a WebSocket upgrade, where a browser can set no header — offered as the
   * subprotocol `pu-key.KEY`.
   */
  session(req: IncomingMessage, keyIn: "header" | "subprotocol"): Session | undefined {
    const id = cookieValue(req.headers.cookie, this.cookieName);
    const session = id === undefined ? undefined : this.sessions.get(hash(id));
    if (!session) return undefined;
    const sent = keyIn === "header" ? req.headers[KEY_HEADER] : keyFromSubprotocols(req.headers["sec-websocket-protocol"]);
    return typeof sent === "string" && sameSecret(sent, session.key) ? session : undefined;
  }

  /** Set-Cookie for a new session: no Max-Age (it ends with the browser), HttpOnly, SameSite=Strict. */
  sessionCookie(sessionId: string): string {
    return `${this.cookieName}=${sessionId}; Path=/; HttpOnly; SameSite=Strict`;
  }

  private dropExpired(now: number): void {
    for (const [key, expires] of this.loginTokens) if (expires <= now) this.loginTokens.delete(key);
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function keyFromSubprotocols(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const offered = header.split(",").map((p) => p.trim()).find((p) => p.startsWith(KEY_SUBPROTOCOL_PREFIX));
  return offered?.slice(KEY_SUBPROTOCOL_PREFIX.length);
}
