import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PuError } from "@pu/core/errors";
import { connectClient, type Client } from "../src/client.js";
import { FrameDecoder, encodeFrame } from "../src/frame.js";
import { DAEMON_VERSION, PROTOCOL_VERSION, type EventFrame, type HealthResult } from "../src/protocol.js";
import { createServer, type ConnectionContext, type Handlers, type IpcServer, type ServerOptions } from "../src/server.js";
import { RawPeer, tempDir, waitFor } from "./support.js";

type LogEntry = { event: string; fields: Record<string, unknown> };

let dir: Awaited<ReturnType<typeof tempDir>>;
const cleanups: (() => unknown)[] = [];

beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await dir.remove();
});

function health(): HealthResult {
  return {
    pid: process.pid,
    uptimeSeconds: 1,
    protocolVersion: PROTOCOL_VERSION,
    daemonVersion: DAEMON_VERSION,
    home: "/home",
    agentCount: 0,
    liveAgentCount: 0,
    projects: [],
  };
}

/** Handlers shaped like the daemon's: errors, a slow request, a stream that echoes input. */
function testHandlers(): Handlers {
  let fastSeen!: () => void;
  const fastArrived = new Promise<void>((resolve) => (fastSeen = resolve));
  const attachIds = new Map<number, number | string>();
  return {
    health: async () => health(),
    status: async (req) => {
      throw new PuError("NOT_INITIALIZED", `no pu project at ${req.projectRoot}`);
    },
    kill: async () => {
      throw new Error("boom");
    },
    logs: async (req) => {
      if (req.agentId === "slow") await fastArrived;
      else fastSeen();
      return { data: Buffer.from(req.agentId), offset: 0, endOffset: req.agentId.length, exited: false };
    },
    resume: () => new Promise(() => {}),
    shutdown: (_req, ctx) => {
      ctx.close();
      return new Promise(() => {});
    },
    attach: async (req, ctx) => {
      attachIds.set(ctx.connectionId, req.id);
      setImmediate(() => {
        for (let i = 0; i < 3; i++) {
          ctx.send({ type: "output", id: req.id, agentId: req.agentId, data: Buffer.from(`replay-${i}`), offset: i });
        }
      });
      return { agentId: req.agentId, offset: 0, endOffset: 3, cols: 80, rows: 24, exited: false };
    },
    input: async (req, ctx) => {
      const streamId = attachIds.get(ctx.connectionId);
      if (streamId === undefined) throw new PuError("INVALID_STATE", "not attached");
      ctx.send({ type: "output", id: streamId, agentId: req.agentId, data: req.data, offset: 100 });
      if (Buffer.from(req.data).toString() === "exit\r") {
        ctx.send({ type: "exit", id: streamId, agentId: req.agentId, exitCode: 0 });
      }
      return { bytes: req.data.length };
    },
  };
}

async function startServer(options: Partial<ServerOptions> = {}): Promise<{ server: IpcServer; logs: LogEntry[] }> {
  const logs: LogEntry[] = [];
  const server = createServer({
    socketPath: dir.socketPath,
    handlers: testHandlers(),
    log: (event, fields) => logs.push({ event, fields }),
    ...options,
  });
  await server.listen();
  cleanups.push(() => server.close());
  return { server, logs };
}

async function connect(socketPath = dir.socketPath): Promise<Client> {
  const client = await connectClient({ socketPath, clientName: "test" });
  cleanups.push(() => client.close());
  return client;
}

async function rawPeer(): Promise<RawPeer> {
  const peer = await RawPeer.connect(dir.socketPath);
  cleanups.push(() => peer.destroy());
  return peer;
}

async function rejection(promise: Promise<unknown>): Promise<PuError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PuError);
    return error as PuError;
  }
  throw new Error("expected a rejection");
}

/** A hand-written daemon for replies the real server never sends. */
async function startFakeDaemon(onFrame: (frame: Record<string, unknown>, socket: Socket) => void): Promise<Server> {
  const fake = createNetServer((socket) => {
    const decoder = new FrameDecoder();
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) onFrame(frame, socket);
    });
  });
  await new Promise<void>((resolve) => fake.listen(dir.socketPath, resolve));
  cleanups.push(() => new Promise((resolve) => fake.close(resolve)));
  return fake;
}

function helloAck(id: unknown, protocolVersion = PROTOCOL_VERSION): Buffer {
  return encodeFrame({ type: "helloAck", id, protocolVersion, daemonVersion: "9.9.9", pid: 4242 });
}

describe("client and server over a real Unix socket", () => {
  it("does the hello handshake and answers a request", async () => {
    await startServer();
    const client = await connect();
    expect(client.daemon).toEqual({ protocolVersion: PROTOCOL_VERSION, daemonVersion: DAEMON_VERSION, pid: process.pid });
    expect(await client.request("health", {})).toEqual(health());
  });

  it("creates the socket with mode 0600", async () => {
    await startServer();
    expect((await stat(dir.socketPath)).mode & 0o777).toBe(0o600);
  });

  it("turns a handler's PuError into that code, and anything else into INTERNAL (logged)", async () => {
    const { logs } = await startServer();
    const client = await connect();
    const notInit = await rejection(client.request("status", { projectRoot: "/nowhere" }));
    expect(notInit.code).toBe("NOT_INITIALIZED");
    expect(notInit.message).toBe("no pu project at /nowhere");
    const internal = await rejection(client.request("kill", { projectRoot: "/p", target: "all" }));
    expect(internal.code).toBe("INTERNAL");
    expect(internal.message).toContain("boom");
    expect(logs.some((l) => l.event === "ipc.handler_error" && String(l.fields.message).includes("boom"))).toBe(true);
  });

  it("answers invalid, unknown and unsupported requests with INVALID_ARGUMENT and keeps the connection", async () => {
    await startServer();
    const client = await connect();
    const invalid = await rejection(client.request("spawn", {} as never));
    expect(invalid.code).toBe("INVALID_ARGUMENT");
    expect(invalid.message).toContain("projectRoot");
    const wrongType = await rejection(client.request("resize", { agentId: "a", cols: 0, rows: 24 }));
    expect(wrongType.message).toContain("cols");
    const unknown = await rejection(client.request("bogus" as never, {} as never));
    expect(unknown.code).toBe("INVALID_ARGUMENT");
    expect(unknown.message).toContain("bogus");
    const unsupported = await rejection(client.request("diff", { projectRoot: "/p" }));
    expect(unsupported.code).toBe("INVALID_ARGUMENT");
    expect(unsupported.message).toContain("unsupported");
    expect((await client.request("health", {})).pid).toBe(process.pid);
  });

  it("correlates concurrent replies by id even when they come back out of order", async () => {
    await startServer();
    const client = await connect();
    // The slow request's handler waits until the fast one has run, so its reply comes second.
    const [slow, fast] = await Promise.all([
      client.request("logs", { agentId: "slow" }),
      client.request("logs", { agentId: "fast" }),
    ]);
    expect(Buffer.from(slow.data).toString()).toBe("slow");
    expect(Buffer.from(fast.data).toString()).toBe("fast");
    expect(Buffer.isBuffer(fast.data)).toBe(true);
  });

  it("times out a request the daemon never answers, and the connection still works", async () => {
    await startServer();
    const client = await connect();
    // A long wait already pending must not delay a shorter one behind it.
    const slow = rejection(client.request("resume", { projectRoot: "/p", agentId: "slow" }, { timeoutMs: 60_000 }));
    const error = await rejection(client.request("resume", { projectRoot: "/p", agentId: "a" }, { timeoutMs: 200 }));
    expect(error.code).toBe("TIMEOUT");
    expect(error.message).toContain("resume");
    expect((await client.request("health", {})).pid).toBe(process.pid);
    client.close();
    expect((await slow).code).toBe("DAEMON_UNAVAILABLE");
  });

  it("rejects pending requests with DAEMON_UNAVAILABLE when the connection drops", async () => {
    await startServer();
    const client = await connect();
    const error = await rejection(client.request("shutdown", {}));
    expect(error.code).toBe("DAEMON_UNAVAILABLE");
    await client.closed;
    expect((await rejection(client.request("health", {}))).code).toBe("DAEMON_UNAVAILABLE");
  });

  it("says plainly when no daemon is running", async () => {
    const error = await rejection(connectClient({ socketPath: dir.socketPath, clientName: "test" }));
    expect(error.code).toBe("DAEMON_UNAVAILABLE");
    expect(error.message).toBe(`pu daemon is not running (no socket at ${dir.socketPath})`);
  });

  it("treats a socket left by a killed daemon as not running, and a new server takes it over", async () => {
    // A real process binds the socket and dies without cleaning up.
    const child = spawn(process.execPath, [
      "-e",
      `require("net").createServer().listen(${JSON.stringify(dir.socketPath)}, () => process.kill(process.pid, "SIGKILL"))`,
    ]);
    await new Promise((resolve) => child.once("exit", resolve));
    expect(existsSync(dir.socketPath)).toBe(true);

    const error = await rejection(connectClient({ socketPath: dir.socketPath, clientName: "test" }));
    expect(error.code).toBe("DAEMON_UNAVAILABLE");
    expect(error.message).toContain("not running");

    const { logs } = await startServer();
    expect(logs.some((l) => l.event === "ipc.stale_socket_removed")).toBe(true);
    expect((await (await connect()).request("health", {})).pid).toBe(process.pid);
  });

  it("refuses to listen where a live server answers, with EADDRINUSE", async () => {
    await startServer();
    const second = createServer({ socketPath: dir.socketPath, handlers: {} });
    await expect(second.listen()).rejects.toMatchObject({ code: "EADDRINUSE" });
    expect((await (await connect()).request("health", {})).pid).toBe(process.pid);
  });

  it("refuses a client with another protocol version, naming the daemon's", async () => {
    await startServer();
    const peer = await rawPeer();
    peer.send({ type: "hello", id: 1, protocolVersion: 999, client: "future-pu" });
    const reply = await peer.nextFrame();
    expect(reply).toMatchObject({ type: "error", id: 1, code: "PROTOCOL_MISMATCH" });
    expect(reply.message).toContain(`protocol ${PROTOCOL_VERSION}`);
    expect(reply.message).toContain("999");
    await waitFor(() => peer.closed, "the server to close the connection");
  });

  it("requires hello as the first frame", async () => {
    await startServer();
    const peer = await rawPeer();
    peer.send({ type: "health", id: 1 });
    expect(await peer.nextFrame()).toMatchObject({ type: "error", id: 1, code: "PROTOCOL_MISMATCH" });
    await waitFor(() => peer.closed, "the server to close the connection");
  });

  it("tells the user to restart a daemon that speaks another protocol version", async () => {
    await startFakeDaemon((frame, socket) => socket.write(helloAck(frame.id, PROTOCOL_VERSION + 1)));
    const error = await rejection(connectClient({ socketPath: dir.socketPath, clientName: "test" }));
    expect(error.code).toBe("PROTOCOL_MISMATCH");
    expect(error.message).toContain(`protocol ${PROTOCOL_VERSION + 1}`);
    expect(error.message).toContain(`protocol ${PROTOCOL_VERSION}`);
    expect(error.message).toContain("pu daemon restart");
  });

  it("passes on a daemon's PROTOCOL_MISMATCH refusal with the restart hint", async () => {
    await startFakeDaemon((frame, socket) =>
      socket.end(
        encodeFrame({ type: "error", id: frame.id, code: "PROTOCOL_MISMATCH", message: "pu daemon 0.0.1 speaks protocol 0" }),
      ),
    );
    const error = await rejection(connectClient({ socketPath: dir.socketPath, clientName: "test" }));
    expect(error.code).toBe("PROTOCOL_MISMATCH");
    expect(error.message).toContain("protocol 0");
    expect(error.message).toContain(`protocol ${PROTOCOL_VERSION}`);
    expect(error.message).toContain("pu daemon restart");
  });

  it("streams events with input on the same connection, including events sent before the consumer pulls", async () => {
    await startServer();
    const client = await connect();
    const stream = await client.openStream("attach", { agentId: "a1" });
    expect(stream.result).toMatchObject({ agentId: "a1", cols: 80, rows: 24 });
    await client.request("health", {}); // the replay events are on their way or buffered by now
    const events = stream[Symbol.asyncIterator]();
    const replay: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { value } = await events.next();
      expect(value?.type).toBe("output");
      replay.push(Buffer.from((value as Extract<EventFrame, { type: "output" }>).data).toString());
    }
    expect(replay).toEqual(["replay-0", "replay-1", "replay-2"]);

    expect(await stream.request("input", { agentId: "a1", data: Buffer.from("ls\r") })).toEqual({ bytes: 3 });
    const echoed = (await events.next()).value as Extract<EventFrame, { type: "output" }>;
    expect(Buffer.isBuffer(echoed.data)).toBe(true);
    expect(Buffer.from(echoed.data).toString()).toBe("ls\r");

    await stream.request("input", { agentId: "a1", data: Buffer.from("exit\r") });
    expect((await events.next()).value?.type).toBe("output");
    expect((await events.next()).value).toMatchObject({ type: "exit", agentId: "a1", exitCode: 0 });

    stream.close();
    expect((await events.next()).done).toBe(true);
    // Closing the stream leaves the connection usable.
    expect((await client.request("health", {})).pid).toBe(process.pid);
  });

  it("keeps events that arrive in the same chunk as the stream's ok reply", async () => {
    await startFakeDaemon((frame, socket) => {
      if (frame.type === "hello") {
        socket.write(helloAck(frame.id));
        return;
      }
      const id = frame.id;
      socket.write(
        Buffer.concat([
          encodeFrame({ type: "ok", id, result: { agentId: "a", offset: 0, endOffset: 2, cols: 80, rows: 24, exited: false } }),
          encodeFrame({ type: "output", id, agentId: "a", data: Buffer.from("hi"), offset: 0 }),
          encodeFrame({ type: "output", id: 999, agentId: "b", data: Buffer.from("not ours"), offset: 0 }),
          encodeFrame({ type: "exit", id, agentId: "a", exitCode: 3 }),
        ]),
      );
      socket.end();
    });
    const client = await connect();
    const stream = await client.openStream("attach", { agentId: "a" });
    const received: EventFrame[] = [];
    for await (const event of stream) received.push(event);
    expect(received.map((e) => e.type)).toEqual(["output", "exit"]);
    expect(Buffer.from((received[0] as Extract<EventFrame, { type: "output" }>).data).toString()).toBe("hi");
  });

  it("still delivers the events that arrived before the daemon closed the connection", async () => {
    await startFakeDaemon((frame, socket) => {
      if (frame.type === "hello") {
        socket.write(helloAck(frame.id));
        return;
      }
      const id = frame.id;
      socket.write(encodeFrame({ type: "ok", id, result: { agentId: "a", offset: 0, endOffset: 50, cols: 80, rows: 24, exited: false } }));
      for (let i = 0; i < 50; i++) socket.write(encodeFrame({ type: "output", id, agentId: "a", data: Buffer.from([i]), offset: i }));
      socket.end(encodeFrame({ type: "exit", id, agentId: "a", exitCode: 7 }));
    });
    const client = await connect();
    const stream = await client.openStream("attach", { agentId: "a" });
    await client.closed; // a consumer still busy with earlier output when the daemon went away
    const received: EventFrame[] = [];
    for await (const event of stream) received.push(event);
    expect(received).toHaveLength(51);
    expect(received.at(-1)).toMatchObject({ type: "exit", exitCode: 7 });
  });

  it("survives garbage from one client while another keeps working", async () => {
    const { server, logs } = await startServer();
    const client = await connect();

    const garbage = await rawPeer();
    garbage.socket.write(Buffer.from([0, 0, 0, 3, 0xc1, 0xc1, 0xc1]));
    expect(await garbage.nextFrame()).toMatchObject({ type: "error", id: null, code: "INVALID_ARGUMENT" });
    await waitFor(() => garbage.closed, "the garbage connection to close");

    const huge = await rawPeer();
    huge.socket.write(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    expect(await huge.nextFrame()).toMatchObject({ type: "error", id: null, code: "INVALID_ARGUMENT" });
    await waitFor(() => huge.closed, "the oversize connection to close");

    expect(logs.filter((l) => l.event === "ipc.bad_frame")).toHaveLength(2);
    expect((await client.request("health", {})).pid).toBe(process.pid);
    await waitFor(() => server.connectionCount() === 1, "only the good client to remain");
  });

  it("refuses connections over the cap and accepts again once one leaves", async () => {
    const { server } = await startServer({ maxConnections: 2 });
    const first = await connect();
    await connect();
    const refused = await rejection(connectClient({ socketPath: dir.socketPath, clientName: "third" }));
    expect(refused.code).toBe("DAEMON_UNAVAILABLE");
    expect(refused.message).toContain("2 connections");
    expect(refused.details).toEqual({ maxConnections: 2 });

    first.close();
    await first.closed;
    await waitFor(() => server.connectionCount() < 2, "the server to notice the closed client");
    expect((await (await connect()).request("health", {})).pid).toBe(process.pid);
  });

  it("refuses and closes a connection that says no hello in time, freeing its slot; one that does stays", async () => {
    const { server, logs } = await startServer({ maxConnections: 2, helloTimeoutMs: 300 });
    const silent = await rawPeer();
    const client = await connect();
    expect(await silent.nextFrame()).toMatchObject({ type: "error", id: null, code: "TIMEOUT" });
    await waitFor(() => silent.closed, "the silent connection to close");
    await waitFor(() => server.connectionCount() === 1, "its slot to be free");
    expect(logs.some((l) => l.event === "ipc.hello_timeout")).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await client.request("health", {})).pid).toBe(process.pid);
    expect((await (await connect()).request("health", {})).pid).toBe(process.pid);
  });

  it("reports backpressure from send() and calls onDrain once a slow reader catches up", async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    let overHighWater = false;
    let bufferedWhenFull = 0;
    let drained = false;
    await startServer({
      highWaterBytes: 256 * 1024,
      handlers: {
        attach: async (req, ctx: ConnectionContext) => {
          setImmediate(() => {
            // Pump until the socket says stop, as an attach viewer does.
            while (sent < 1000) {
              sent++;
              if (!ctx.send({ type: "output", id: req.id, agentId: req.agentId, data: chunk, offset: sent })) {
                overHighWater = true;
                bufferedWhenFull = ctx.bufferedBytes();
                break;
              }
            }
            ctx.onDrain(() => (drained = true));
          });
          return { agentId: req.agentId, offset: 0, endOffset: 0, cols: 80, rows: 24, exited: false };
        },
      },
    });
    const peer = await rawPeer();
    peer.socket.pause(); // a viewer that does not read
    peer.send({ type: "hello", id: 1, protocolVersion: PROTOCOL_VERSION, client: "slow" });
    peer.send({ type: "attach", id: 2, agentId: "a" });
    await waitFor(() => overHighWater, "send() to report the high-water mark");
    expect(sent).toBeLessThan(1000);
    expect(bufferedWhenFull).toBeGreaterThan(256 * 1024);
    expect(drained).toBe(false);

    peer.socket.resume();
    await waitFor(() => drained, "onDrain after the reader caught up");
    await waitFor(() => peer.frames.length === sent + 2, "every queued event to arrive");
  });

  it("delivers every output event intact to a reader that stalls and catches up (frame buffers are reused)", async () => {
    // One scratch buffer rewritten after every send, as a viewer sends views of its ring:
    // the bytes must be taken at send(), and a reused frame buffer must not be written
    // over while its frame still waits in the socket.
    const scratch = Buffer.alloc(200 * 1024);
    const sizes = Array.from({ length: 120 }, (_, i) => [1, 4096, 65536, 131072 + 100, 199 * 1024][i % 5]!);
    const expected = sizes.map((size, i) => Buffer.alloc(size, i % 251));
    await startServer({
      handlers: {
        attach: async (req, ctx: ConnectionContext) => {
          let next = 0;
          const pump = () => {
            while (next < sizes.length) {
              expected[next]!.copy(scratch);
              const more = ctx.send({ type: "output", id: req.id, agentId: req.agentId, data: scratch.subarray(0, sizes[next]), offset: next });
              scratch.fill(0xee);
              next++;
              if (!more) {
                ctx.onDrain(pump);
                return;
              }
            }
            ctx.send({ type: "exit", id: req.id, agentId: req.agentId, exitCode: 0 });
          };
          setImmediate(pump);
          return { agentId: req.agentId, offset: 0, endOffset: 0, cols: 80, rows: 24, exited: false };
        },
      },
    });
    const client = await connect();
    const stream = await client.openStream("attach", { agentId: "a" });
    const events = stream[Symbol.asyncIterator]();
    // Stall until the daemon's side has had to queue frames behind a full socket.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const received: Buffer[] = [];
    for (;;) {
      const { value } = await events.next();
      if (!value || value.type === "exit") break;
      if (value.type === "output") received.push(Buffer.from(value.data));
    }
    expect(received).toHaveLength(sizes.length);
    received.forEach((data, i) => {
      expect(data.length, `event ${i}`).toBe(sizes[i]);
      expect(data.equals(expected[i]!), `event ${i} intact`).toBe(true);
    });
  });

  it("ends streams and connections on close() and removes the socket file", async () => {
    const { server } = await startServer();
    const client = await connect();
    const stream = await client.openStream("attach", { agentId: "a1" });
    const pendingError = rejection(client.request("resume", { projectRoot: "/p", agentId: "a" }));
    await server.close();
    const seen: EventFrame[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen.length).toBeLessThanOrEqual(3);
    expect((await pendingError).code).toBe("DAEMON_UNAVAILABLE");
    await client.closed;
    expect(existsSync(dir.socketPath)).toBe(false);
  });
});
