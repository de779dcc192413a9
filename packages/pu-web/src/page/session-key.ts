// How the page proves it holds its session's key, shared by the server and the page's bundle (it
// lives with the page, which may import no server module).
// The cookie alone is not enough: cookies are scoped by host, not port (RFC 6265 §8.5), so every
// other service on 127.0.0.1 the browser visits receives `pu_session_PORT`. The key reaches the
// page once, in the login redirect's URL fragment (never sent to any server), and lives in the
// page's localStorage, which is per origin (port included): no other local service can read it.

/** The login redirect: `/#pu-key=KEY`. */
export const KEY_FRAGMENT_PREFIX = "#pu-key=";
/** The header every /api request carries the key in. */
export const KEY_HEADER = "x-pu-key";
/** A browser cannot set headers on a WebSocket upgrade; the page offers `pu` and `pu-key.KEY` as subprotocols. */
export const PAGE_SUBPROTOCOL = "pu";
export const KEY_SUBPROTOCOL_PREFIX = "pu-key.";
