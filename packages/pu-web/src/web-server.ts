// The HTTP and WebSocket routes of `pu web`. Every request passes the access guard in the order
// docs/web.md gives (Host, then Origin for upgrades, then — past the page's own files — the
// session cookie and key, then same-site JSON for POSTs); a refusal says only its status code.
import { readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import path from "node:path";
import type { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { WebSocketServer, type WebSocket } from "ws";
import { isPuError } from "@pu/core/errors";
import { RequestSchemas } from "@pu/ipc/protocol";
import type { AccessGuard } from "./access-guard.js";
import { fieldNotFromThePage, isPageRequest, type DaemonBridge } from "./daemon-bridge.js";
import { KEY_FRAGMENT_PREFIX, PAGE_SUBPROTOCOL } from "./page/session-key.js";
import { bridgeTerminal } from "./terminal-bridge.js";
import type { EventLog } from "@pu/core/event-log";

const MAX_BODY_BYTES = 1024 * 1024;
/** A WebSocket frame larger than this closes that socket (1009); the page sends keys in 64 KiB pieces. */
const MAX_FRAME_BYTES = 1024 * 1024;
/** A status socket that cannot take this much is dropped (the page reconnects and gets a snapshot). */
const STATUS_SOCKET_LIMIT = 8 * 1024 * 1024;

const SECURITY_HEADERS: Record<string, string> = {
  // The page's script and styles are files of this server; xterm.js sets element styles.
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".png": "image/png",
};

interface Asset {
  body: Buffer;
  type: string;
}

/** The page's files, read once at start (dist/page next to this module). */
function loadAssets(): Map<string, Asset> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "page");
  const assets = new Map<string, Asset>();
  for (const name of ["index.html", "app.js", "app.css"]) {
    try {
      assets.set(name, { body: readFileSync(path.join(dir, name)), type: CONTENT_TYPES[path.extname(name)] ?? "application/octet-stream" });
    } catch {
      // a build without the page: the server still answers the API (tests of the guard)
    }
  }
  return assets;
}

function refuse(res: ServerResponse, status: 401 | 403 | 404 | 405 | 413 | 415 | 503): void {
  const text = { 401: "unauthorized", 403: "forbidden", 404: "not found", 405: "method not allowed", 413: "too large", 415: "unsupported media type", 503: "starting" }[status];
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8" });
  res.end(`${text}\n`);
}

function refuseUpgrade(socket: Duplex, status: 401 | 403 | 404 | 503): void {
  const text = { 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 503: "Service Unavailable" }[status];
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

/** The body, or undefined once it passes MAX_BODY_BYTES (what follows is read and dropped, never kept). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) {
      req.resume();
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      req.off("data", collect);
      req.resume();
      resolve(undefined);
    };
    req.on("data", collect);
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The ws subprotocol choice: the page offers `pu` (and its key as another); nothing else is spoken. */
function pickSubprotocol(offered: Set<string>): string | false {
  return offered.has(PAGE_SUBPROTOCOL) ? PAGE_SUBPROTOCOL : false;
}

export class WebServer {
  private guard: AccessGuard | undefined;
  private readonly assets = loadAssets();
  private readonly servers: Server[] = [];
  private readonly sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, handleProtocols: pickSubprotocol });
  private stopListener: (() => void) | undefined;

  /**
   * @param openPage `$PU_HOME/web-open.html`, the redirect `pu web` points the browser at: removed
   *   once the login token it holds is spent (and when the server stops), so it never lingers.
   */
  constructor(
    private readonly bridge: DaemonBridge,
    private readonly log: EventLog,
    private readonly openPage: string,
  ) {}

  /** A new HTTP server with this server's routes (one per listening address). */
  readonly makeHttpServer = (): Server => {
    const server = createServer((req, res) => void this.handle(req, res).catch((error: unknown) => this.internalError(res, error)));
    server.on("upgrade", (req, socket, head) => this.upgrade(req, socket, head));
    this.servers.push(server);
    return server;
  };

  useGuard(guard: AccessGuard): void {
    this.guard = guard;
  }

  onStop(listener: () => void): void {
    this.stopListener = listener;
  }

  close(): void {
    rmSync(this.openPage, { force: true });
    for (const client of this.sockets.clients) client.close(1001, "pu web is stopping");
    for (const server of this.servers) {
      server.close();
      server.closeAllConnections();
    }
  }

  private internalError(res: ServerResponse, error: unknown): void {
    this.log.event("request_failed", { error });
    if (!res.headersSent) sendJson(res, 500, { ok: false, code: "INTERNAL", message: "internal error" });
    else res.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const guard = this.guard;
    if (!guard) return refuse(res, 503);
    if (!guard.hostAllowed(req)) return refuse(res, 403);
    const url = new URL(req.url ?? "/", "http://pu.invalid");
    const method = req.method ?? "GET";

    if (url.pathname === "/login") return this.login(guard, url, res);
    if (url.pathname.startsWith("/cli/")) return this.cliRoute(guard, req, res, url.pathname, method);

    // The page's own files hold no secret, so they need no session. This is also what makes the
    // first open work: `pu web` starts the browser on a file:// redirect, and after that
    // cross-site chain Chromium withholds the SameSite=Strict cookie from the final GET /
    // (the page's own requests afterwards are same-site and carry it).
    if (method === "GET" || method === "HEAD") {
      if (url.pathname === "/") return this.asset(res, "index.html");
      if (url.pathname.startsWith("/assets/")) return this.asset(res, url.pathname.slice("/assets/".length));
    }

    if (!guard.session(req, "header")) return refuse(res, 401);
    if (method === "GET" || method === "HEAD") {
      if (url.pathname === "/api/projects") return sendJson(res, 200, { projects: this.bridge.projects() });
      return refuse(res, 404);
    }
    if (method !== "POST") return refuse(res, 405);
    // A state-changing request: same site, JSON (which a cross-site form cannot send, and a
    // cross-site fetch cannot without a preflight this server never grants).
    if (!guard.requestFromThisSite(req)) return refuse(res, 403);
    if (!String(req.headers["content-type"] ?? "").startsWith("application/json")) return refuse(res, 415);
    if (url.pathname === "/api/request") return this.daemonRequest(req, res);
    return refuse(res, 404);
  }

  private login(guard: AccessGuard, url: URL, res: ServerResponse): void {
    const token = url.searchParams.get("token");
    const session = token ? guard.redeemLoginToken(token) : undefined;
    if (!token || !session) {
      this.log.event("login_refused");
      return refuse(res, 401);
    }
    this.log.event("login");
    this.removeOpenPageHolding(token);
    // The redirect drops the token from the address bar and history, and hands the page its
    // session key in the fragment, which the browser never sends to any server; the page moves
    // it to localStorage and clears the address bar.
    res.writeHead(303, { ...SECURITY_HEADERS, location: `/${KEY_FRAGMENT_PREFIX}${session.key}`, "set-cookie": guard.sessionCookie(session.id) });
    res.end();
  }

  /** web-open.html is worthless once its token is spent; a newer one (another token) is left alone. */
  private removeOpenPageHolding(token: string): void {
    try {
      if (readFileSync(this.openPage, "utf8").includes(token)) rmSync(this.openPage, { force: true });
    } catch {
      // none (`pu web --no-open`), or gone already
    }
  }

  /** What `pu web` asks with the per-start secret from web.json: a login link, or to stop. */
  private async cliRoute(guard: AccessGuard, req: IncomingMessage, res: ServerResponse, route: string, method: string): Promise<void> {
    if (method !== "POST") return refuse(res, 405);
    if (!guard.hasSecret(req)) return refuse(res, 401);
    if (route === "/cli/login-token") return sendJson(res, 200, { token: guard.mintLoginToken() });
    if (route === "/cli/stop") {
      sendJson(res, 200, { stopping: true, pid: process.pid });
      res.on("finish", () => this.stopListener?.());
      return;
    }
    refuse(res, 404);
  }

  private asset(res: ServerResponse, name: string): void {
    const asset = this.assets.get(name);
    if (!asset) return refuse(res, 404);
    res.writeHead(200, { ...SECURITY_HEADERS, "content-type": asset.type });
    res.end(asset.body);
  }

  private async daemonRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    if (!body) return refuse(res, 413);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: "the request body is not JSON" });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: "the request body must be a JSON object {type, fields}" });
    }
    const { type, fields: givenFields } = parsed as { type?: unknown; fields?: unknown };
    const fields = (givenFields ?? {}) as Record<string, unknown>;
    if (typeof type !== "string" || !isPageRequest(type) || typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: "not a request the page may make" });
    }
    const notHere = fieldNotFromThePage(type, fields);
    if (notHere) return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: `${type}.${notHere} is for the CLI, not the page` });
    // Only projects the daemon already knows: the page cannot point pu at any other folder.
    if ("projectRoot" in fields && !this.bridge.projects().some((p) => p.root === fields.projectRoot)) {
      return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: "not a project the pu daemon knows" });
    }
    const checked = RequestSchemas[type].safeParse({ ...fields, type, id: 0 });
    if (!checked.success) {
      const issue = checked.error.issues[0];
      return sendJson(res, 400, { ok: false, code: "INVALID_ARGUMENT", message: `${issue?.path.join(".") || "request"}: ${issue?.message ?? "invalid"}` });
    }
    try {
      const result = await this.bridge.request(type, fields as never);
      sendJson(res, 200, { ok: true, result });
    } catch (error) {
      if (!isPuError(error)) throw error;
      sendJson(res, 200, { ok: false, code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) });
    }
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    const guard = this.guard;
    if (!guard) return refuseUpgrade(socket, 503);
    if (!guard.hostAllowed(req) || !guard.originAllowed(req)) return refuseUpgrade(socket, 403);
    if (!guard.session(req, "subprotocol")) return refuseUpgrade(socket, 401);
    const url = new URL(req.url ?? "/", "http://pu.invalid");
    if (url.pathname === "/ws/status") {
      this.sockets.handleUpgrade(req, socket, head, (ws) => this.statusSocket(this.closeOnFrameErrors(ws, url.pathname)));
      return;
    }
    const agentId = url.searchParams.get("agent");
    if (url.pathname === "/ws/terminal" && agentId && /^ag-[A-Za-z0-9_-]{1,64}$/.test(agentId)) {
      const readOnly = url.searchParams.get("readOnly") === "1";
      this.sockets.handleUpgrade(req, socket, head, (ws) => void bridgeTerminal(this.closeOnFrameErrors(ws, url.pathname), this.bridge, { agentId, readOnly }, this.log));
      return;
    }
    refuseUpgrade(socket, 404);
  }

  /**
   * A frame over MAX_FRAME_BYTES, invalid UTF-8 in a text frame, a bad opcode: ws starts closing
   * that socket itself (1009, 1007, 1002) and emits `error`, which — with no listener — would be
   * thrown and end the whole server. Logged (the code, never the frame); only that socket goes.
   */
  private closeOnFrameErrors(ws: WebSocket, route: string): WebSocket {
    ws.on("error", (error: Error & { code?: string }) => this.log.event("socket_error", { route, code: error.code, message: error.message }));
    return ws;
  }

  /** The live agent list: a snapshot of every project, then each status event as it comes. */
  private statusSocket(ws: WebSocket): void {
    const send = (value: unknown) => {
      if (ws.bufferedAmount > STATUS_SOCKET_LIMIT) {
        ws.terminate();
        return;
      }
      ws.send(JSON.stringify(value));
    };
    send({ type: "projects", projects: this.bridge.projects() });
    const off = this.bridge.on((event) => send(event));
    ws.on("close", off);
    ws.on("message", () => undefined);
  }
}
