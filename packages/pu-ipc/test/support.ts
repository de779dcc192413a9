import { mkdtemp, rm } from "node:fs/promises";
import { createConnection, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrameDecoder, encodeFrame } from "../src/frame.js";

/** A temp dir for one test's sockets; short path so it fits the Unix socket path limit. */
export async function tempDir(): Promise<{ dir: string; socketPath: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "pu-ipc-"));
  return { dir, socketPath: join(dir, "daemon.sock"), remove: () => rm(dir, { recursive: true, force: true }) };
}

export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A bare socket speaking frames by hand, for what the real client never sends. */
export class RawPeer {
  readonly frames: Record<string, unknown>[] = [];
  closed = false;
  private readonly decoder = new FrameDecoder();
  private readCount = 0;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.frames.push(...this.decoder.push(chunk)));
    socket.on("error", () => {});
    socket.on("close", () => (this.closed = true));
  }

  static connect(socketPath: string): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(socketPath);
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new RawPeer(socket));
      });
    });
  }

  send(msg: object): void {
    this.socket.write(encodeFrame(msg));
  }

  /** The next frame not yet returned, in arrival order. */
  async nextFrame(): Promise<Record<string, unknown>> {
    await waitFor(() => this.frames.length > this.readCount || this.closed, "a frame");
    const frame = this.frames[this.readCount];
    if (!frame) throw new Error("connection closed without a frame");
    this.readCount++;
    return frame;
  }

  destroy(): void {
    this.socket.destroy();
  }
}
