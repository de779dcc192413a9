// The daemon's side of the socket: framing, handshake, validation and dispatch.
// Handlers see validated requests and throw PuError; nothing a client sends can throw out of here.
import { chmod, lstat, unlink } from "node:fs/promises";
import { createConnection, createServer as createNetServer, type Server, type Socket } from "node:net";
import { isPuError, type ErrorCode } from "@pu/core/errors";
import { FrameDecoder, MAX_FRAME_BYTES, encodeFrame, encodeFrameWithBinary } from "./frame.js";
import {
  DAEMON_VERSION,
  PROTOCOL_VERSION,
  RequestSchemas,
  type ErrorFrame,
  type EventFrame,
  type RequestOf,
  type RequestType,
  type ResultOf,
} from "./protocol.js";

export const DEFAULT_MAX_CONNECTIONS = 512;
/** send() reports backpressure once this many bytes wait in a connection's socket. */
export const DEFAULT_HIGH_WATER_BYTES = 1024 * 1024;
/** How long close() lets a connection flush before cutting it. */
const CLOSE_GRACE_MS = 2000;
/**
 * Every client says hello as it connects; one that has not after this long (a stuck or hostile
 * peer) would otherwise hold one of the server's connection slots for good.
 */
const DEFAULT_HELLO_TIMEOUT_MS = 30_000;

export interface ConnectionContext {
  readonly connectionId: number;
  /** The `client` the peer named in hello. */
  readonly clientName: string;
  /**
   * Writes an event; false once the socket holds more than the high-water mark (the event is still queued).
   * The event is encoded before send returns, so an output event's data may be a view of memory that changes next.
   */
  send(event: EventFrame): boolean;
  bufferedBytes(): number;
  onClose(cb: () => void): void;
  /**
   * Called each time the socket's write buffer has drained. Guaranteed to follow a send()
   * that returned false (Node emits 'drain' after any write over its own 16 KiB mark).
   */
  onDrain(cb: () => void): void;
  readonly closed: boolean;
  close(): void;
}

export type Handler<T extends RequestType> = (req: RequestOf<T>, ctx: ConnectionContext) => Promise<ResultOf<T>>;
/** What a server may answer (a test server answers a few). */
export type Handlers = { [T in RequestType]?: Handler<T> };
/**
 * One handler for every request type but `hello` (the server answers the handshake itself):
 * the daemon's table, so a forgotten handler does not compile.
 */
export type HandlerTable = { [T in Exclude<RequestType, "hello">]: Handler<T> };
export type LogFn = (event: string, fields: Record<string, unknown>) => void;

export interface ServerOptions {
  socketPath: string;
  handlers: Handlers;
  maxConnections?: number;
  highWaterBytes?: number;
  /** A connection that has not said hello by then is refused and closed (default 30 s). */
  helloTimeoutMs?: number;
  log?: LogFn;
}

export interface IpcServer {
  /** Binds the socket (mode 0600). Rejects with code EADDRINUSE when a live server answers there. */
  listen(): Promise<void>;
  /** Ends every connection and removes the socket file. */
  close(): Promise<void>;
  connectionCount(): number;
}

type Frame = Record<string, unknown>;
type FrameId = number | string | null;

function frameId(frame: Frame): FrameId {
  const id = frame.id;
  return typeof id === "number" || typeof id === "string" ? id : null;
}

/** A peer's value quoted for an error message, cut short: the reply must stay small whatever was sent. */
function quote(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function describeIssues(type: string, issues: readonly { path: PropertyKey[]; message: string }[]): string {
  const parts = issues.slice(0, 3).map((issue) => {
    const path = issue.path.map(String).join(".");
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return `invalid ${type} request: ${parts.join("; ")}${more}`;
}

class Connection implements ConnectionContext {
  clientName = "";
  closed = false;
  private readonly decoder = new FrameDecoder();
  private greeted = false;
  private refused = false;
  private readonly closeCallbacks: (() => void)[] = [];
  private readonly drainCallbacks: (() => void)[] = [];

  constructor(
    readonly connectionId: number,
    private readonly socket: Socket,
    private readonly handlers: Handlers,
    private readonly highWaterBytes: number,
    private readonly log: LogFn,
    helloTimeoutMs: number,
  ) {
    const helloTimer = setTimeout(() => {
      if (this.greeted || this.closed || this.refused) return;
      this.log("ipc.hello_timeout", { connectionId, helloTimeoutMs });
      this.refuse(null, "TIMEOUT", `no hello within ${helloTimeoutMs} ms`);
    }, helloTimeoutMs);
    helloTimer.unref();
    socket.once("close", () => clearTimeout(helloTimer));
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => {
      for (const cb of this.drainCallbacks) this.runCallback("drain", cb);
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // EPIPE/ECONNRESET are a client going away; 'close' follows.
      this.log("ipc.connection_error", { connectionId, code: error.code, message: error.message });
    });
    socket.on("close", () => {
      this.closed = true;
      for (const cb of this.closeCallbacks) this.runCallback("close", cb);
      this.closeCallbacks.length = 0;
      this.drainCallbacks.length = 0;
    });
  }

  send(event: EventFrame): boolean {
    if (this.closed) return false;
    if (event.type === "output") {
      if (!this.socket.writableEnded) this.writeOutput(event);
    } else {
      this.write(event);
    }
    return this.socket.writableLength <= this.highWaterBytes;
  }

  bufferedBytes(): number {
    return this.socket.writableLength;
  }

  onClose(cb: () => void): void {
    if (this.closed) this.runCallback("close", cb);
    else this.closeCallbacks.push(cb);
  }

  onDrain(cb: () => void): void {
    if (!this.closed) this.drainCallbacks.push(cb);
  }

  close(): void {
    if (this.closed) return;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Answers with an error and ends the connection; later input is read (to see EOF) but ignored. */
  private refuse(id: FrameId, code: ErrorCode, message: string): void {
    this.replyError(id, code, message);
    this.refused = true;
    this.close();
  }

  private onData(chunk: Buffer): void {
    if (this.closed || this.refused) return;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      this.log("ipc.bad_frame", { connectionId: this.connectionId, message: (error as Error).message });
      this.refuse(null, "INVALID_ARGUMENT", `unreadable frame: ${(error as Error).message}`);
      return;
    }
    for (const frame of frames) {
      if (this.closed || this.refused) return;
      this.onFrame(frame);
    }
  }

  private onFrame(frame: Frame): void {
    const id = frameId(frame);
    const type = frame.type;
    if (type === "hello") {
      this.onHello(frame, id);
      return;
    }
    if (!this.greeted) {
      this.refuse(id, "PROTOCOL_MISMATCH", `the first frame must be hello, got ${quote(String(type))}`);
      return;
    }
    if (id === null) {
      this.replyError(null, "INVALID_ARGUMENT", "request has no id (a number or a string)");
      return;
    }
    if (typeof type !== "string" || !Object.hasOwn(RequestSchemas, type)) {
      this.replyError(id, "INVALID_ARGUMENT", `unknown request type ${quote(type ?? null)}`);
      return;
    }
    const parsed = RequestSchemas[type as RequestType].safeParse(frame);
    if (!parsed.success) {
      this.replyError(id, "INVALID_ARGUMENT", describeIssues(type, parsed.error.issues));
      return;
    }
    void this.dispatch(parsed.data as RequestOf<RequestType>, id);
  }

  private onHello(frame: Frame, id: FrameId): void {
    const theirs = frame.protocolVersion;
    if (theirs !== PROTOCOL_VERSION) {
      this.log("ipc.protocol_mismatch", { connectionId: this.connectionId, clientVersion: theirs });
      this.refuse(
        id,
        "PROTOCOL_MISMATCH",
        `pu daemon ${DAEMON_VERSION} speaks protocol ${PROTOCOL_VERSION}, the client sent protocol ${quote(theirs ?? null)}`,
      );
      return;
    }
    const parsed = RequestSchemas.hello.safeParse(frame);
    if (!parsed.success) {
      this.refuse(id, "INVALID_ARGUMENT", describeIssues("hello", parsed.error.issues));
      return;
    }
    this.greeted = true;
    this.clientName = parsed.data.client;
    this.write({ type: "helloAck", id: parsed.data.id, protocolVersion: PROTOCOL_VERSION, daemonVersion: DAEMON_VERSION, pid: process.pid });
  }

  private async dispatch(req: RequestOf<RequestType>, id: number | string): Promise<void> {
    const handler = this.handlers[req.type] as Handler<RequestType> | undefined;
    if (!handler) {
      this.replyError(id, "INVALID_ARGUMENT", `unsupported request ${quote(req.type)}`);
      return;
    }
    let result: unknown;
    try {
      result = await handler(req, this);
    } catch (error) {
      if (isPuError(error)) {
        this.replyError(id, error.code, error.message, error.details);
      } else {
        this.log("ipc.handler_error", {
          connectionId: this.connectionId,
          type: req.type,
          message: error instanceof Error ? error.message : String(error),
          stack: error instanceof Error ? error.stack : undefined,
        });
        this.replyError(id, "INTERNAL", `internal error in ${req.type}: ${error instanceof Error ? error.message : String(error)}`);
      }
      return;
    }
    if (this.closed) return;
    try {
      this.write({ type: "ok", id, result });
    } catch (error) {
      // The result could not be framed (e.g. over the size limit); the client still gets an answer.
      this.log("ipc.reply_unencodable", { connectionId: this.connectionId, type: req.type, message: (error as Error).message });
      this.replyError(id, "INTERNAL", `cannot send the ${req.type} reply: ${(error as Error).message}`);
    }
  }

  private replyError(id: FrameId, code: ErrorCode, message: string, details?: Record<string, unknown>): void {
    // An id the protocol does not allow (over 128 chars) is not echoed: it could push the reply past the frame limit.
    const frame: ErrorFrame = { type: "error", id: typeof id === "string" && id.length > 128 ? null : id, code, message };
    if (details !== undefined) frame.details = details;
    this.write(frame);
  }

  /**
   * Output is most of what a daemon sends: its bytes are copied once, into the frame. Each frame
   * gets its own buffer: reusing frame buffers once the socket's write callback had fired
   * handed viewers bytes of later frames under load (tests/fault-concurrency caught it).
   */
  private writeOutput(event: EventFrame): void {
    this.socket.write(encodeFrameWithBinary(event as unknown as Record<string, unknown>, "data", MAX_FRAME_BYTES));
  }

  private write(msg: object): void {
    if (this.closed || this.socket.writableEnded) return;
    this.socket.write(encodeFrame(msg));
  }

  private runCallback(what: string, cb: () => void): void {
    try {
      cb();
    } catch (error) {
      this.log("ipc.callback_error", { connectionId: this.connectionId, what, message: (error as Error).message });
    }
  }
}

/** True when something accepts connections on the socket path. */
function somethingListens(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createConnection(socketPath);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

async function isSocketFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSocket();
  } catch {
    return false;
  }
}

export function createServer(options: ServerOptions): IpcServer {
  const { socketPath, handlers } = options;
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const highWaterBytes = options.highWaterBytes ?? DEFAULT_HIGH_WATER_BYTES;
  const log: LogFn = options.log ?? (() => {});
  const connections = new Map<number, Connection>();
  let nextConnectionId = 1;
  let listening = false;

  const server: Server = createNetServer((socket) => {
    const connectionId = nextConnectionId++;
    if (connections.size >= maxConnections) {
      log("ipc.connection_refused", { connectionId, reason: "maxConnections", maxConnections });
      socket.on("error", () => {});
      const refusal: ErrorFrame = {
        type: "error",
        id: null,
        code: "DAEMON_UNAVAILABLE",
        message: `pu daemon is at its limit of ${maxConnections} connections`,
        // Tells a client this refusal (a live daemon, full) from no daemon at all.
        details: { maxConnections },
      };
      socket.end(encodeFrame(refusal));
      socket.resume(); // read (and drop) input so the peer's close is noticed
      setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
      return;
    }
    const connection = new Connection(connectionId, socket, handlers, highWaterBytes, log, options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS);
    connections.set(connectionId, connection);
    socket.on("close", () => connections.delete(connectionId));
  });
  server.on("error", (error) => log("ipc.server_error", { message: error.message }));

  function bind(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        server.off("listening", onListening);
        reject(error);
      };
      const onListening = () => {
        server.off("error", onError);
        resolve();
      };
      server.once("error", onError);
      server.once("listening", onListening);
      server.listen(socketPath);
    });
  }

  return {
    async listen() {
      try {
        await bind();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
        if (!(await isSocketFile(socketPath)) || (await somethingListens(socketPath))) {
          const inUse = new Error(`${socketPath} is in use by another process (is a pu daemon already running?)`, {
            cause: error,
          }) as NodeJS.ErrnoException;
          inUse.code = "EADDRINUSE";
          throw inUse;
        }
        log("ipc.stale_socket_removed", { socketPath });
        await unlink(socketPath).catch(() => {});
        await bind();
      }
      listening = true;
      await chmod(socketPath, 0o600);
      log("ipc.listening", { socketPath });
    },

    async close() {
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of connections.values()) connection.close();
      await closed;
      await unlink(socketPath).catch(() => {});
      log("ipc.closed", { socketPath });
    },

    connectionCount: () => connections.size,
  };
}
