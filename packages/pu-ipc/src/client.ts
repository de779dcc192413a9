// The CLI's side of the socket. It is on every command's hot path, so it loads only
// node:net, msgpackr (via frame) and PuError: protocol.ts (and zod) are types only here.
import { createConnection, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { PuError, isErrorCode, type ErrorCode } from "@pu/core/errors";
import { FrameDecoder, encodeFrame } from "./frame.js";
import type {
  EventFrame,
  HelloAck,
  PROTOCOL_VERSION as ProtocolVersionValue,
  RequestFields,
  RequestType,
  ResultOf,
} from "./protocol.js";
import { REQUEST_TIMEOUTS_MS } from "./request-timeouts.js";

/** Must equal protocol.ts's PROTOCOL_VERSION; the type annotation fails to compile when it drifts. */
const PROTOCOL_VERSION: typeof ProtocolVersionValue = 1;

/** Handshake and per-request timeout unless the caller says otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

// A consumer that stops pulling stream events pauses the socket here, so the daemon
// sees a full socket and applies its own slow-viewer policy instead of us buffering forever.
const STREAM_PAUSE_EVENTS = 1024;
const STREAM_RESUME_EVENTS = 256;

export interface ConnectOptions {
  socketPath: string;
  /** Sent in hello; shows up in the daemon's log. */
  clientName: string;
  /** Handshake timeout and the default request timeout (0 = none). */
  timeoutMs?: number;
}

export interface RequestOptions {
  /** Overrides the client's default; 0 waits forever. */
  timeoutMs?: number;
}

export type RequestFn = <T extends RequestType>(
  type: T,
  fields: RequestFields<T>,
  options?: RequestOptions,
) => Promise<ResultOf<T>>;

export interface ClientStream<T extends RequestType = RequestType> extends AsyncIterable<EventFrame> {
  /** The `ok` reply that opened the stream. */
  readonly result: ResultOf<T>;
  /** Another request on the same connection (input, resize while attached). */
  request: RequestFn;
  /** Stops delivering events locally; the daemon stops sending when the connection closes. */
  close(): void;
}

export interface Client {
  /** What the daemon said in its helloAck. */
  readonly daemon: HelloAck;
  request: RequestFn;
  openStream<T extends RequestType>(
    type: T,
    fields: RequestFields<T>,
    options?: RequestOptions,
  ): Promise<ClientStream<T>>;
  /** Resolves once the connection is closed (by either side). */
  readonly closed: Promise<void>;
  close(): void;
}

type Frame = Record<string, unknown>;

interface Pending {
  type: string;
  resolve(frame: Frame): void;
  reject(error: Error): void;
  timeoutMs: number;
  /** performance.now() after which the request fails with TIMEOUT; Infinity for none. */
  deadline: number;
}

/** Events for one stream, buffered until the consumer pulls them. */
class EventQueue {
  private readonly events: EventFrame[] = [];
  private waiter: ((result: IteratorResult<EventFrame>) => void) | undefined;
  ended = false;

  constructor(private readonly onLengthChange: () => void) {}

  get length(): number {
    return this.events.length;
  }

  push(event: EventFrame): void {
    if (this.ended) return;
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter({ value: event, done: false });
      return;
    }
    this.events.push(event);
    this.onLengthChange();
  }

  /** `discard` drops the unread backlog (the consumer stopped); otherwise next() drains it first. */
  end(discard: boolean): void {
    if (this.ended) return;
    this.ended = true;
    if (discard) this.events.length = 0;
    this.onLengthChange();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<EventFrame>> {
    const event = this.events.shift();
    if (event) {
      this.onLengthChange();
      return Promise.resolve({ value: event, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    if (this.waiter) return Promise.reject(new Error("stream already has a pending next()"));
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

class Connection {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private readonly streams = new Map<number, EventQueue>();
  private nextId = 1;
  private isClosed = false;
  private paused = false;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineTimerAt = 0;
  private closeError: PuError | undefined;
  private closedByUs = false;
  readonly closed: Promise<void>;

  constructor(
    // A Unix socket, or a host's `pu daemon stdio` reached through a transport (ssh, exec).
    private readonly socket: Duplex,
    private readonly defaultTimeoutMs: number,
  ) {
    let markClosed!: () => void;
    this.closed = new Promise((resolve) => (markClosed = resolve));
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", () => {
      // 'close' follows and fails whatever is pending.
    });
    socket.on("close", () => {
      this.shutdown(this.closeError ?? new PuError("DAEMON_UNAVAILABLE", "connection to the pu daemon closed"));
      markClosed();
    });
  }

  allocateId(): number {
    return this.nextId++;
  }

  /** Sends a request and resolves with its reply frame (ok or helloAck). */
  send(
    type: string,
    fields: object,
    options: RequestOptions | undefined,
    stream?: { id: number; queue: EventQueue },
  ): Promise<Frame> {
    if (this.isClosed) {
      return Promise.reject(this.closeError ?? new PuError("DAEMON_UNAVAILABLE", "connection to the pu daemon closed"));
    }
    const id = stream?.id ?? this.allocateId();
    let frame: Buffer;
    try {
      frame = encodeFrame({ ...fields, type, id });
    } catch (error) {
      return Promise.reject(new PuError("INVALID_ARGUMENT", `cannot send ${type}: ${(error as Error).message}`));
    }
    // Register the stream before writing: its first events may share a chunk with the ok reply.
    if (stream) this.streams.set(id, stream.queue);
    // The request's own default (request-timeouts.ts) before the connection's.
    const timeoutMs = options?.timeoutMs ?? REQUEST_TIMEOUTS_MS[type as RequestType] ?? this.defaultTimeoutMs;
    const deadline = timeoutMs > 0 ? performance.now() + timeoutMs : Infinity;
    const reply = new Promise<Frame>((resolve, reject) => {
      this.pending.set(id, { type, resolve, reject, timeoutMs, deadline });
      this.socket.write(frame);
    });
    this.armDeadlineTimer(deadline);
    if (!stream) return reply;
    return reply.catch((error: unknown) => {
      this.endStream(id, true);
      throw error;
    });
  }

  endStream(id: number, discard: boolean): void {
    const stream = this.streams.get(id);
    if (!stream) return;
    this.streams.delete(id);
    stream.end(discard);
  }

  close(): void {
    if (this.isClosed) return;
    this.closedByUs = true;
    this.closeError ??= new PuError("DAEMON_UNAVAILABLE", "connection to the pu daemon closed by the client");
    this.socket.end();
    // A daemon that never finishes its side must not keep us alive.
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  /** Fails the connection: pending requests reject with error, streams end. */
  fail(error: PuError): void {
    this.closeError ??= error;
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      this.fail(new PuError("PROTOCOL_MISMATCH", `pu daemon sent an unreadable frame: ${(error as Error).message}`));
      return;
    }
    for (const frame of frames) this.onFrame(frame);
  }

  private onFrame(frame: Frame): void {
    const id = frame.id;
    switch (frame.type) {
      case "ok":
      case "helloAck": {
        const entry = typeof id === "number" ? this.takePending(id) : undefined;
        entry?.resolve(frame);
        return;
      }
      case "error": {
        const details = frame.details !== null && typeof frame.details === "object" && !Array.isArray(frame.details) ? (frame.details as Record<string, unknown>) : undefined;
        const error = new PuError(errorCodeOf(frame.code), String(frame.message ?? "unknown error"), details ? { details } : undefined);
        if (typeof id === "number") {
          this.takePending(id)?.reject(error);
        } else {
          // An error without an id is about the connection itself (refused, garbage): it ends.
          this.fail(error);
        }
        return;
      }
      default:
        if (typeof id === "number") this.streams.get(id)?.push(frame as unknown as EventFrame);
    }
  }

  private takePending(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    return entry;
  }

  private shutdown(error: PuError): void {
    this.isClosed = true;
    for (const [id, entry] of this.pending) {
      this.pending.delete(id);
      entry.reject(error);
    }
    this.disarmDeadlineTimer();
    // Events that arrived before the daemon closed the connection (an agent's last output, its
    // exit) stay readable; after our own close() nobody wants them.
    for (const id of [...this.streams.keys()]) this.endStream(id, this.closedByUs);
  }

  // One timer per connection instead of one per request: it stays armed across requests and
  // is only moved when a request's deadline comes before it.
  private armDeadlineTimer(deadline: number): void {
    if (deadline === Infinity || this.isClosed) return;
    if (this.deadlineTimer && deadline >= this.deadlineTimerAt) return;
    this.disarmDeadlineTimer();
    this.deadlineTimerAt = deadline;
    // Unref'd: a pending request always has the socket keeping the process alive.
    this.deadlineTimer = setTimeout(() => this.expireRequests(), Math.max(0, deadline - performance.now())).unref();
  }

  private disarmDeadlineTimer(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
  }

  private expireRequests(): void {
    this.deadlineTimer = undefined;
    const now = performance.now();
    let next = Infinity;
    for (const [id, entry] of this.pending) {
      if (entry.deadline <= now) {
        this.pending.delete(id);
        entry.reject(new PuError("TIMEOUT", `pu daemon did not answer ${entry.type} within ${entry.timeoutMs} ms`));
      } else if (entry.deadline < next) {
        next = entry.deadline;
      }
    }
    this.armDeadlineTimer(next);
  }

  /** Pauses reading while any stream has a long unread backlog. */
  updateFlow = (): void => {
    let backlog = 0;
    for (const stream of this.streams.values()) backlog = Math.max(backlog, stream.length);
    if (!this.paused && backlog >= STREAM_PAUSE_EVENTS) {
      this.paused = true;
      this.socket.pause();
    } else if (this.paused && backlog <= STREAM_RESUME_EVENTS) {
      this.paused = false;
      this.socket.resume();
    }
  };
}

function errorCodeOf(code: unknown): ErrorCode {
  return isErrorCode(code) ? code : "INTERNAL";
}

function openSocket(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    const onError = (error: NodeJS.ErrnoException) => {
      socket.destroy();
      if (error.code === "ENOENT") {
        reject(new PuError("DAEMON_UNAVAILABLE", `pu daemon is not running (no socket at ${socketPath})`));
      } else if (error.code === "ECONNREFUSED") {
        reject(new PuError("DAEMON_UNAVAILABLE", `pu daemon is not running (stale socket at ${socketPath})`));
      } else {
        reject(new PuError("DAEMON_UNAVAILABLE", `cannot reach the pu daemon at ${socketPath}: ${error.message}`, { cause: error }));
      }
    };
    socket.once("error", onError);
    socket.once("connect", () => {
      socket.off("error", onError);
      resolve(socket);
    });
  });
}

/** What a person does about a version skew with the local daemon. */
const RESTART_REMEDY = "run `pu daemon restart`";

function mismatch(detail: string, remedy: string): PuError {
  return new PuError("PROTOCOL_MISMATCH", `${detail}; ${remedy}`);
}

/** Connects to the daemon and completes the hello handshake. */
export async function connectClient(options: ConnectOptions): Promise<Client> {
  const socket = await openSocket(options.socketPath);
  return handshake(socket, options.clientName, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, RESTART_REMEDY);
}

/**
 * The same client over any byte stream that reaches a daemon: a host's `pu daemon stdio` run
 * through a transport (`ssh HOST pu daemon stdio`, `podman exec -i CTR pu daemon stdio`). The
 * hello handshake and its version check are the same as over the local socket.
 */
export function connectClientOverStream(stream: Duplex, options: Omit<ConnectOptions, "socketPath"> & { remedy: string }): Promise<Client> {
  return handshake(stream, options.clientName, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, options.remedy);
}

/** `remedy`: what a person does when the two sides speak different protocols. */
async function handshake(socket: Duplex, clientName: string, timeoutMs: number, remedy: string): Promise<Client> {
  const connection = new Connection(socket, timeoutMs);

  let ack: Frame;
  try {
    ack = await connection.send("hello", { protocolVersion: PROTOCOL_VERSION, client: clientName }, { timeoutMs });
  } catch (error) {
    connection.fail(error instanceof PuError ? error : new PuError("DAEMON_UNAVAILABLE", String(error)));
    if (error instanceof PuError && error.code === "PROTOCOL_MISMATCH") {
      throw mismatch(`${error.message} (this pu speaks protocol ${PROTOCOL_VERSION})`, remedy);
    }
    throw error;
  }
  if (ack.type !== "helloAck" || ack.protocolVersion !== PROTOCOL_VERSION) {
    connection.fail(new PuError("PROTOCOL_MISMATCH", "protocol mismatch"));
    throw mismatch(
      `pu daemon ${String(ack.daemonVersion)} speaks protocol ${String(ack.protocolVersion)}, ` +
        `this pu speaks protocol ${PROTOCOL_VERSION}`,
      remedy,
    );
  }
  const daemon: HelloAck = {
    protocolVersion: ack.protocolVersion,
    daemonVersion: String(ack.daemonVersion),
    pid: Number(ack.pid),
  };

  const request: RequestFn = (type, fields, requestOptions) =>
    connection.send(type, fields, requestOptions).then((reply) => reply.result as ResultOf<typeof type>);

  return {
    daemon,
    request,
    closed: connection.closed,
    close: () => connection.close(),
    async openStream(type, fields, streamOptions) {
      const queue = new EventQueue(connection.updateFlow);
      const id = connection.allocateId();
      const reply = await connection.send(type, fields, streamOptions, { id, queue });
      return {
        result: reply.result as ResultOf<typeof type>,
        request,
        close: () => connection.endStream(id, true),
        [Symbol.asyncIterator]: () => ({
          next: () => queue.next(),
          return: () => {
            connection.endStream(id, true);
            return Promise.resolve({ value: undefined, done: true as const });
          },
        }),
      };
    },
  };
}
