// The page's two ways to the server: POST /api/request (a daemon request from the server's
// allow-list, with the session's CSRF token in a header) and WebSockets on the same origin.
import type { RequestType, ResultOf } from "@pu/ipc/protocol";

const csrf = document.querySelector<HTMLMetaElement>('meta[name="pu-csrf"]')?.content ?? "";

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
    headers: { "content-type": "application/json", "x-pu-csrf": csrf },
    body: JSON.stringify({ type, fields }),
  });
  if (response.status === 401) throw new RequestFailed("UNAUTHORIZED", "this page's session ended: open a new link with `pu web`");
  const body = (await response.json().catch(() => ({ ok: false, code: "INTERNAL", message: `HTTP ${response.status}` }))) as
    | { ok: true; result: ResultOf<T> }
    | { ok: false; code: string; message: string; details?: Record<string, unknown> };
  if (!body.ok) throw new RequestFailed(body.code, body.message, body.details);
  return body.result;
}

export function socketUrl(pathAndQuery: string): string {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${pathAndQuery}`;
}
