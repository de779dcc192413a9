import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

/** A server-sent-events response that notices when the client has gone away. */
export class SseStream {
  private closed = false;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    // Headers go out at once: a client waiting through THINK must see a live response, not a hang.
    res.flushHeaders();
    res.on("close", () => (this.closed = true));
  }

  get gone(): boolean {
    return this.closed || this.res.destroyed;
  }

  /** One event; `name` adds an `event:` line (Anthropic and the Responses API name theirs, Chat Completions does not). */
  send(data: unknown, name?: string): void {
    if (this.gone) return;
    const payload = typeof data === "string" ? data : JSON.stringify(data);
    this.res.write(`${name ? `event: ${name}\n` : ""}data: ${payload}\n\n`);
  }

  async pause(ms: number): Promise<void> {
    if (ms > 0 && !this.gone) await sleep(ms);
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

let counter = 0;
/** A fresh id with the given prefix (`msg_`, `toolu_`, `call_`, `resp_`…). */
export function newId(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter.toString(36).padStart(4, "0")}`;
}
