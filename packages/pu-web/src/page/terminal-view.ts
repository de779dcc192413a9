// One agent's live terminal in xterm.js: the server replays what the daemon's ring holds, then
// streams output; keys go back to the agent; the PTY follows the window's size (the daemon gives
// it the smallest size any viewer asked for). Read-only views send no keys and no size.
//
// Flow control, so a flooding agent never freezes the page: output is written to xterm in
// batches (one write per animation frame), and when more than HIGH_WATER bytes wait for xterm
// to parse, the page asks the server to pause; the server stops reading from the daemon, which
// skips this viewer ahead instead of slowing the agent (a notice says how much was skipped).
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { statusLabel } from "@pu/core/status-label";
import { openSocket, sessionStillValid } from "./api.js";
import { agentActions } from "./agents-view.js";
import { clear, h } from "./dom.js";
import { store } from "./store.js";

const HIGH_WATER = 2 * 1024 * 1024;
const LOW_WATER = 256 * 1024;
/** Output this small, arriving when nothing waits to be drawn, skips the per-frame batch. */
const DIRECT_WRITE_BYTES = 4096;
/**
 * Keys go to the server in binary frames of at most this much: the server closes a socket on a
 * frame over 1 MiB, and a paste arrives from xterm as one string of any size. The bytes are cut
 * after UTF-8 encoding, so no surrogate pair is split; a character cut across two frames is whole
 * again in the PTY, which gets the frames' bytes in order.
 */
const INPUT_PIECE_BYTES = 64 * 1024;

export function renderTerminal(view: HTMLElement, agentId: string, readOnly: boolean): () => void {
  clear(view);
  const title = h("h2", {}, agentId);
  const status = h("span", { className: "status", "data-status": "" });
  const actions = h("span", { className: "actions" });
  const note = h("span", { className: "terminal-note" });
  const modeLink = h("a", { href: `#/agent/${agentId}${readOnly ? "" : "?ro"}`, className: "button", "data-action": "read-only" }, readOnly ? "Take the keyboard" : "Read-only");
  const host = h("div", { className: "terminal", "data-terminal-for": agentId, "data-read-only": readOnly ? "true" : "false" });
  view.append(h("div", { className: "terminal-head" }, h("a", { href: "#/", className: "button" }, "← Agents"), title, status, actions, modeLink, note), host);

  const drawHead = () => {
    const place = store.findAgent(agentId);
    if (!place) return;
    title.textContent = `${place.agent.name} `;
    title.append(h("small", {}, `${agentId} · ${place.agent.agentType}${place.worktree ? ` · ${place.worktree.name}` : ""}`));
    const label = statusLabel(place.agent);
    status.textContent = label;
    status.className = `status status-${place.agent.status}`;
    status.setAttribute("data-status", label);
    const fresh = agentActions(place.project, place.agent, true);
    actions.replaceChildren(...fresh.childNodes);
  };
  const offStatus = store.onStatus(() => requestAnimationFrame(drawHead));
  drawHead();

  const term = new Terminal({ convertEol: false, scrollback: 5000, disableStdin: readOnly, fontSize: 13, cursorBlink: !readOnly, allowProposedApi: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(host);

  const ws = openSocket(`/ws/terminal?agent=${encodeURIComponent(agentId)}${readOnly ? "&readOnly=1" : ""}`);
  ws.binaryType = "arraybuffer";
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let parsing = 0;
  let paused = false;
  let frame = 0;
  let received = 0;
  let skipped = 0;
  host.setAttribute("data-bytes", "0");
  host.setAttribute("data-skipped", "0");

  const sendJson = (value: unknown) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(value));
  };
  const flowCheck = () => {
    const backlog = pendingBytes + parsing;
    if (!paused && backlog > HIGH_WATER) {
      paused = true;
      sendJson({ type: "pause" });
    } else if (paused && backlog < LOW_WATER) {
      paused = false;
      sendJson({ type: "resume" });
    }
  };
  const flush = () => {
    frame = 0;
    if (pending.length === 0) return;
    const batch = new Uint8Array(pendingBytes);
    let at = 0;
    for (const chunk of pending) {
      batch.set(chunk, at);
      at += chunk.byteLength;
    }
    pending = [];
    pendingBytes = 0;
    parsing += batch.byteLength;
    term.write(batch, () => {
      parsing -= batch.byteLength;
      host.setAttribute("data-bytes", String(received - pendingBytes - parsing));
      flowCheck();
    });
  };
  ws.onmessage = (message) => {
    if (message.data instanceof ArrayBuffer) {
      const chunk = new Uint8Array(message.data);
      received += chunk.byteLength;
      if (pending.length === 0 && parsing === 0 && chunk.byteLength <= DIRECT_WRITE_BYTES) {
        // A key's echo with nothing queued: straight to xterm, which draws it on the next frame
        // (batching it for a frame of our own first would double the keystroke latency).
        parsing += chunk.byteLength;
        term.write(chunk, () => {
          parsing -= chunk.byteLength;
          host.setAttribute("data-bytes", String(received - pendingBytes - parsing));
          flowCheck();
        });
        return;
      }
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      flowCheck();
      if (!frame) frame = requestAnimationFrame(flush);
      return;
    }
    const event = JSON.parse(String(message.data)) as { type: string; message?: string; exitCode?: number; code?: string; cols?: number; rows?: number; skippedBytes?: number };
    if (event.type === "notice" && typeof event.skippedBytes === "number") {
      // The daemon skipped this slow viewer ahead: the page says so rather than freezing.
      skipped += event.skippedBytes;
      host.setAttribute("data-skipped", String(skipped));
    }
    if (event.type === "attached") {
      host.setAttribute("data-attached", "true");
      sendSize();
    } else if (event.type === "exit") note.textContent = `exited ${event.exitCode ?? "?"}`;
    else if (event.type === "notice" || event.type === "error") note.textContent = event.message ?? event.code ?? "";
    else if (event.type === "closed") note.textContent = "the terminal stream ended";
  };
  ws.onclose = () => {
    host.setAttribute("data-attached", "false");
    void sessionStillValid();
  };

  const sendKeys = (bytes: Uint8Array) => {
    if (readOnly || ws.readyState !== WebSocket.OPEN) return;
    for (let at = 0; at < bytes.byteLength; at += INPUT_PIECE_BYTES) ws.send(bytes.subarray(at, at + INPUT_PIECE_BYTES));
  };
  const keys = term.onData((data) => sendKeys(new TextEncoder().encode(data)));
  const binary = term.onBinary((data) => sendKeys(Uint8Array.from(data, (c) => c.charCodeAt(0))));
  const sendSize = () => {
    fit.fit();
    if (!readOnly) sendJson({ type: "resize", cols: term.cols, rows: term.rows });
  };
  let resizeTimer = 0;
  const onResize = () => {
    clearTimeout(resizeTimer);
    resizeTimer = window.setTimeout(sendSize, 100);
  };
  window.addEventListener("resize", onResize);
  fit.fit();
  if (!readOnly) term.focus();

  return () => {
    offStatus();
    window.removeEventListener("resize", onResize);
    keys.dispose();
    binary.dispose();
    ws.close();
    if (frame) cancelAnimationFrame(frame);
    term.dispose();
  };
}
