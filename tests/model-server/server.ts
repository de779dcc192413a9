// A local stand-in for the model APIs the real agent CLIs call, so Claude Code, Codex and
// OpenCode can do whole turns with no account and no network. Answers are scripted by
// directives in the prompt (see script.ts); every request is logged in memory and, when
// asked, as one JSON line per request to a file.
//
// Standalone: `npx tsx tests/model-server/server.ts [--port N] [--log FILE]` prints the base URL.
import { appendFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { answerMessages, viewMessages, type MessagesRequest } from "./anthropic.js";
import { answerChat, viewChat, type ChatRequest } from "./openai-chat.js";
import { answerResponses, viewResponses, type ResponsesRequest } from "./openai-responses.js";
import { planReply, type ConversationView, type Reply } from "./script.js";
import { sendJson } from "./sse.js";

type ModelApi = "anthropic" | "responses" | "chat" | "other";

export interface LoggedRequest {
  /** 1-based order of arrival. */
  seq: number;
  method: string;
  path: string;
  api: ModelApi;
  receivedAt: number;
  /** When the answer's last byte was written (undefined while it streams, or if the client left). */
  finishedAt?: number;
  status?: number;
  bodyBytes: number;
  model?: string;
  stream?: boolean;
  tools: string[];
  /** The end of the newest user message (its last 4,000 characters: CLIs put their own context first). */
  lastUserText?: string;
  /** The end (last 300 characters) of every user message in the conversation, oldest first. */
  userTurnTails: string[];
  /** How the server answered: text, a tool call, or a title for a side request. */
  reply?: Reply["kind"];
  toolName?: string;
  command?: string;
  replyText?: string;
}

export interface ModelServer {
  port: number;
  /** `http://127.0.0.1:PORT` (no trailing slash, no `/v1`). */
  url: string;
  requests: LoggedRequest[];
  /** Resolves with the first logged request (past or future) that `match` accepts. */
  waitForRequest(match: (request: LoggedRequest) => boolean, timeoutMs?: number): Promise<LoggedRequest>;
  close(): Promise<void>;
}

export interface ModelServerOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Appends one JSON line per request (written when its answer ends). */
  logFile?: string;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on("data", (part: Buffer) => {
      size += part.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"));
        req.destroy();
      } else parts.push(part);
    });
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });
}

function apiOf(method: string, path: string): ModelApi {
  if (method !== "POST") return "other";
  const route = path.replace(/^\/v1(?=\/)/, "");
  if (route === "/messages") return "anthropic";
  if (route === "/responses") return "responses";
  if (route === "/chat/completions") return "chat";
  return "other";
}

export function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const requests: LoggedRequest[] = [];
  const waiters = new Set<{ match: (r: LoggedRequest) => boolean; resolve: (r: LoggedRequest) => void }>();

  // Waiters are checked whenever an entry changes: once its request is read, again when its answer ends.
  const notify = (entry: LoggedRequest) => {
    for (const waiter of waiters) {
      if (waiter.match(entry)) {
        waiters.delete(waiter);
        waiter.resolve(entry);
      }
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? "GET";
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const raw = await readBody(req);
    const api = apiOf(method, path);
    const entry: LoggedRequest = { seq: requests.length + 1, method, path, api, receivedAt: Date.now(), bodyBytes: raw.length, tools: [], userTurnTails: [] };
    res.on("finish", () => {
      entry.finishedAt = Date.now();
      entry.status = res.statusCode;
      if (options.logFile) appendFileSync(options.logFile, `${JSON.stringify(entry)}\n`);
      notify(entry);
    });
    requests.push(entry);

    if (api === "other") {
      notify(entry);
      answerOther(res, method, path, raw);
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    } catch {
      notify(entry);
      sendJson(res, 400, { error: { type: "invalid_request_error", message: "body is not JSON" } });
      return;
    }
    entry.model = typeof body.model === "string" ? body.model : undefined;
    entry.stream = body.stream === true;
    const view: ConversationView =
      api === "anthropic" ? viewMessages(body as MessagesRequest) : api === "responses" ? viewResponses(body as ResponsesRequest) : viewChat(body as ChatRequest);
    entry.tools = view.tools.map((t) => t.name);
    entry.lastUserText = view.userTurns.at(-1)?.text.slice(-4000);
    entry.userTurnTails = view.userTurns.map((turn) => turn.text.slice(-300));
    const reply = planReply(view);
    entry.reply = reply.kind;
    if (reply.kind === "tool_call") {
      entry.toolName = reply.tool.name;
      entry.command = reply.command;
    } else entry.replyText = reply.text;
    notify(entry);

    if (api === "anthropic") await answerMessages(res, body as MessagesRequest, reply);
    else if (api === "responses") await answerResponses(res, body as ResponsesRequest, reply);
    else await answerChat(res, body as ChatRequest, reply);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { type: "api_error", message: String(error) } });
      else res.destroy();
    });
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        url: `http://127.0.0.1:${port}`,
        requests,
        waitForRequest(match, timeoutMs = 60_000) {
          const seen = requests.find(match);
          if (seen) return Promise.resolve(seen);
          return new Promise((resolveWait, rejectWait) => {
            const waiter = {
              match,
              resolve: (r: LoggedRequest) => {
                clearTimeout(timer);
                resolveWait(r);
              },
            };
            const timer = setTimeout(() => {
              waiters.delete(waiter);
              const seenPaths = requests.map((r) => `${r.method} ${r.path}`).join(", ") || "none";
              rejectWait(new Error(`the model server saw no matching request within ${timeoutMs} ms (requests so far: ${seenPaths})`));
            }, timeoutMs);
            waiters.add(waiter);
          });
        },
        close: () =>
          new Promise<void>((resolveClose) => {
            // Streams still open (a killed agent's) must not hold the close.
            server.closeAllConnections();
            server.close(() => resolveClose());
          }),
      });
    });
  });
}

/** Everything that is not a model call: Claude's `HEAD /` reachability check, token counts, model lists. */
function answerOther(res: ServerResponse, method: string, path: string, raw: Buffer): void {
  const route = path.replace(/^\/v1(?=\/)/, "");
  if (path === "/" && (method === "HEAD" || method === "GET")) {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(method === "HEAD" ? undefined : "test model server\n");
  } else if (method === "POST" && route === "/messages/count_tokens") {
    sendJson(res, 200, { input_tokens: Math.max(1, Math.round(raw.length / 4)) });
  } else if (method === "GET" && route === "/models") {
    sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model", created: 0, owned_by: "pu-tests" }] });
  } else {
    sendJson(res, 404, { error: { type: "not_found_error", message: `the test model server does not serve ${method} ${path}` } });
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const valueOf = (flag: string) => {
    const at = args.indexOf(flag);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const port = Number.parseInt(valueOf("--port") ?? "0", 10);
  const server = await startModelServer({ port: Number.isFinite(port) ? port : 0, logFile: valueOf("--log") });
  process.stdout.write(`${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
