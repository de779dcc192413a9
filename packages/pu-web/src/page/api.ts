// The page's two ways to the server: POST /api/request (a daemon request from the server's
// allow-list) and WebSockets on the same origin. Both carry the session's key besides the cookie
// (a header; a subprotocol for WebSockets, where a browser can set no header): the cookie alone
// reaches every service on 127.0.0.1, the key only this origin's storage (session-key.ts).
import type { RequestType, ResultOf } from "@pu/ipc/protocol";
import { KEY_FRAGMENT_PREFIX, KEY_HEADER, KEY_SUBPROTOCOL_PREFIX, PAGE_SUBPROTOCOL } from "./session-key.js";

/**
 * localStorage, not sessionStorage: a second tab of this origin (a notification's click, a link
 * opened beside) shares it. It is per origin, port included, so no other local service reads it.
 * Read on every use: a fresh login in another tab replaces both the cookie and the key.
 */
const KEY_STORAGE = "pu-session-key";
export const SIGNED_OUT_LINE = "This page is not signed in to pu web (or pu web restarted): open the link `pu web` prints — run `pu web` again for a new one.";

let signedOut = false;
const signedOutListeners = new Set<() => void>();

/** Moves the key from the login redirect's fragment into storage and clears it from the address bar. */
export function takeKeyFromAddress(): void {
  if (!location.hash.startsWith(KEY_FRAGMENT_PREFIX)) return;
  localStorage.setItem(KEY_STORAGE, location.hash.slice(KEY_FRAGMENT_PREFIX.length));
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

export function hasSessionKey(): boolean {
  return !!localStorage.getItem(KEY_STORAGE);
}

/** The server said 401 (no key, an old one, a server restarted): the page stops and says what to do, once. */
export function markSignedOut(): void {
  if (signedOut) return;
  signedOut = true;
  for (const listener of signedOutListeners) listener();
}

export function isSignedOut(): boolean {
  return signedOut;
}

export function whenSignedOut(listener: () => void): void {
  signedOutListeners.add(listener);
}

function keyHeaders(): Record<string, string> {
  return { [KEY_HEADER]: localStorage.getItem(KEY_STORAGE) ?? "" };
}

/**
 * After a socket closed: is the session still good? A 401 means it never will be again (the
 * page is told); no answer at all means the server is away, and the caller keeps retrying.
 */
export async function sessionStillValid(): Promise<boolean> {
  try {
    const response = await fetch("/api/projects", { credentials: "same-origin", headers: keyHeaders() });
    if (response.status !== 401) return true;
  } catch {
    return true;
  }
  markSignedOut();
  return false;
}

export class RequestFailed extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export async function call<T extends RequestType>(type: T, fields: Record<string, unknown> = {}): Promise<ResultOf<T>> {
  const response = await fetch("/api/request", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", ...keyHeaders() },
    body: JSON.stringify({ type, fields }),
  });
  if (response.status === 401) {
    markSignedOut();
    throw new RequestFailed("UNAUTHORIZED", SIGNED_OUT_LINE);
  }
  const body = (await response.json().catch(() => ({ ok: false, code: "INTERNAL", message: `HTTP ${response.status}` }))) as
    | { ok: true; result: ResultOf<T> }
    | { ok: false; code: string; message: string; details?: Record<string, unknown> };
  if (!body.ok) throw new RequestFailed(body.code, body.message, body.details);
  return body.result;
}

/** A WebSocket to this server, offering `pu` and the key (the server answers with `pu`). */
export function openSocket(pathAndQuery: string): WebSocket {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${pathAndQuery}`;
  return new WebSocket(url, [PAGE_SUBPROTOCOL, `${KEY_SUBPROTOCOL_PREFIX}${localStorage.getItem(KEY_STORAGE) ?? ""}`]);
}
