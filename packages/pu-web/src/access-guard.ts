// Who may talk to the web server. Checked in this order on every request (docs/web.md):
//   1. Host must name this server (127.0.0.1, localhost, [::1] or the --bind address, with its
//      port): anything else is 403 before anything else is looked at, which is what defeats
//      DNS rebinding (a page on evil.example resolved to 127.0.0.1 still sends its own Host).
//   2. A WebSocket upgrade must carry an Origin of this server (403).
//   3. A session cookie (HttpOnly, SameSite=Strict), got by trading a one-time login token
//      from `pu web`'s URL; none: 401.
//   4. Every POST carries the session's CSRF token in a header a cross-site form cannot set.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { hostAndPort } from "@pu/core/web-server-file";

/** A login link unused for this long stops working. */
const LOGIN_TOKEN_TTL_MS = 15 * 60_000;
/** Outstanding login links kept at most (the oldest is dropped). */
const MAX_LOGIN_TOKENS = 64;
const CSRF_HEADER = "x-pu-csrf";

export interface Session {
  csrf: string;
  createdAt: number;
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
   * For state-changing requests, on top of the CSRF token: an Origin, when the browser sends
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

  /** Trades an unused, unexpired login token for a new session id (the token is spent either way). */
  redeemLoginToken(token: string, now = Date.now()): string | undefined {
    this.dropExpired(now);
    const key = hash(token);
    if (!this.loginTokens.has(key)) return undefined;
    this.loginTokens.delete(key);
    const sessionId = randomBytes(32).toString("base64url");
    this.sessions.set(hash(sessionId), { csrf: randomBytes(24).toString("base64url"), createdAt: now });
    return sessionId;
  }

  session(req: IncomingMessage): Session | undefined {
    const id = cookieValue(req.headers.cookie, this.cookieName);
    return id === undefined ? undefined : this.sessions.get(hash(id));
  }

  csrfMatches(req: IncomingMessage, session: Session): boolean {
    const sent = req.headers[CSRF_HEADER];
    return typeof sent === "string" && sameSecret(sent, session.csrf);
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
