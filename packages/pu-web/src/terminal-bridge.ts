// One browser terminal ↔ one `attach` stream on a daemon connection of its own (the daemon
// gives the PTY the smallest size any connection asked for, as with several `pu attach`es).
// Output goes to the page as binary frames, exactly the bytes the agent wrote; the page's
// keys come back as binary frames (`input`), its size as JSON (`resize`).
//
// Backpressure: when the browser's socket holds more than HIGH_WATER bytes not yet written,
// or the page says its terminal is behind (`pause`), this stops pulling events from the
// daemon; the client then stops reading the socket and the daemon's slow-viewer rule skips
// the viewer ahead (a `notice` says how much). A flooding agent therefore never piles up
// here or in the page, and never slows the agent or other viewers.
import { WebSocket, type RawData } from "ws";
import { isPuError } from "@pu/core/errors";
import type { DaemonBridge } from "./daemon-bridge.js";
import type { EventLog } from "@pu/core/event-log";

const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
const MAX_SIDE = 1000;

export interface TerminalOptions {
  agentId: string;
  readOnly: boolean;
}

type PageMessage = { type: "resize"; cols: number; rows: number } | { type: "pause" } | { type: "resume" };

function parsePageMessage(data: RawData): PageMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data.toString());
  } catch {
    return undefined;
  }
  const m = value as { type?: unknown; cols?: unknown; rows?: unknown };
  if (m.type === "pause" || m.type === "resume") return { type: m.type };
  const side = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_SIDE;
  if (m.type === "resize" && side(m.cols) && side(m.rows)) return { type: "resize", cols: m.cols, rows: m.rows };
  return undefined;
}

function sendJson(ws: WebSocket, value: unknown): void {
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(value));
}

export async function bridgeTerminal(ws: WebSocket, bridge: DaemonBridge, { agentId, readOnly }: TerminalOptions, log: EventLog): Promise<void> {
  let client;
  let stream;
  try {
    client = await bridge.viewerConnection();
    stream = await client.openStream("attach", { agentId });
  } catch (error) {
    client?.close();
    sendJson(ws, { type: "error", code: isPuError(error) ? error.code : "INTERNAL", message: error instanceof Error ? error.message : String(error) });
    ws.close(1011, "attach failed");
    return;
  }
  const viewerClient = client;
  const attached = stream;
  sendJson(ws, { type: "attached", ...attached.result, readOnly });

  let unsent = 0;
  let pausedByPage = false;
  let wake: (() => void) | undefined;
  const wakeUp = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const open = () => ws.readyState === WebSocket.OPEN;

  ws.on("message", (data, isBinary) => {
    if (isBinary) {
      if (readOnly) return;
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      void attached.request("input", { agentId, data: bytes }).catch(() => undefined);
      return;
    }
    const message = parsePageMessage(data);
    if (message?.type === "pause") pausedByPage = true;
    else if (message?.type === "resume") {
      pausedByPage = false;
      wakeUp();
    } else if (message?.type === "resize" && !readOnly) {
      attached
        .request("resize", { agentId, cols: message.cols, rows: message.rows })
        .then((size) => sendJson(ws, { type: "size", ...size }))
        .catch(() => undefined);
    }
  });
  ws.on("close", () => {
    attached.close();
    viewerClient.close();
    wakeUp();
  });

  try {
    for await (const event of attached) {
      while (open() && (pausedByPage || unsent > HIGH_WATER)) await new Promise<void>((resolve) => (wake = resolve));
      if (!open()) break;
      if (event.type === "output") {
        const size = event.data.byteLength;
        unsent += size;
        ws.send(event.data, { binary: true }, () => {
          unsent -= size;
          if (unsent <= LOW_WATER && !pausedByPage) wakeUp();
        });
      } else if (event.type === "exit") {
        sendJson(ws, { type: "exit", exitCode: event.exitCode });
      } else if (event.type === "notice") {
        sendJson(ws, { type: "notice", code: event.code, message: event.message, ...(event.skippedBytes === undefined ? {} : { skippedBytes: event.skippedBytes }) });
      }
    }
  } catch (error) {
    log.event("terminal_stream_failed", { agentId, error });
  }
  if (open()) {
    sendJson(ws, { type: "closed" });
    ws.close(1000, "stream ended");
  }
  viewerClient.close();
}
