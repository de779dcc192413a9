import type { Options } from "msgpackr";
// The "msgpackr/pack" entry (in Node: msgpackr's plain index.js) skips the stream classes and the
// optional native string extractor, roughly halving import time on the CLI's hot path.
import { Packr, RESERVE_START_SPACE, Unpackr } from "msgpackr/pack";

/** Largest frame body either side accepts; a bigger length prefix is refused unread. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const HEADER_BYTES = 4;

/** A frame that cannot be encoded or decoded; the connection that produced it is unusable. */
export class FrameError extends Error {
  override name = "FrameError";
}

// Plain msgpack maps (no msgpackr record extension) so any msgpack peer can read us.
// Undefined fields are left out rather than sent as msgpackr's undefined extension
// (skipValues is supported at run time but missing from msgpackr's typings).
const packr = new Packr({ useRecords: false, skipValues: [undefined] } as Options);
// bin decodes to a Buffer view of the frame body (no copy); 64-bit ints come back as numbers.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/**
 * Encodes one message as a frame: 4-byte big-endian body length, then a msgpack map.
 * Uint8Array/Buffer values become msgpack bin.
 */
export function encodeFrame(msg: object, maxBytes = MAX_FRAME_BYTES): Buffer {
  let frame: Buffer;
  try {
    // Reserve the header inside the packer's own buffer so the frame needs no concat.
    frame = packr.pack(msg, RESERVE_START_SPACE | HEADER_BYTES);
  } catch (error) {
    throw new FrameError(`cannot encode frame: ${(error as Error).message}`, { cause: error });
  }
  const bodyLength = frame.length - HEADER_BYTES;
  if (bodyLength > maxBytes) {
    throw new FrameError(`frame of ${bodyLength} bytes exceeds the ${maxBytes}-byte limit`);
  }
  frame.writeUInt32BE(bodyLength, 0);
  return frame;
}

/** msgpack encodings of the binary fields' keys (e.g. "data"), made once each. */
const encodedKeys = new Map<string, Buffer>();

function encodedKey(key: string): Buffer {
  let bytes = encodedKeys.get(key);
  if (!bytes) {
    bytes = Buffer.from(packr.pack(key));
    encodedKeys.set(key, bytes);
  }
  return bytes;
}

/** Reads the header of the msgpack map at the start of `head`: its entry count and header length. */
function mapHeader(head: Buffer): { count: number; length: number } {
  const first = head[0]!;
  if (first >= 0x80 && first <= 0x8f) return { count: first & 0x0f, length: 1 };
  if (first === 0xde) return { count: head.readUInt16BE(1), length: 3 };
  if (first === 0xdf) return { count: head.readUInt32BE(1), length: 5 };
  throw new FrameError("cannot encode frame: message is not a map");
}

/**
 * The same frame encodeFrame makes, for a message with one large binary field (an agent's
 * output): the other fields go through msgpackr, the field's bytes are copied once, straight
 * from `msg[key]` into a buffer that holds this frame alone. Through msgpackr they would be
 * copied into its shared scratch buffer, and frames cut from one scratch buffer keep all of
 * it alive while any of them waits in a socket: under a flood of output that retained
 * memory cost the daemon a full garbage collection every few MB.
 * `msg[key]` may be a view of memory that changes right after the call. `allocate(size)` supplies
 * the frame's memory: exactly `size` bytes, e.g. the start of a reused buffer.
 */
export function encodeFrameWithBinary(
  msg: Record<string, unknown>,
  key: string,
  maxBytes = MAX_FRAME_BYTES,
  allocate: (size: number) => Buffer = Buffer.allocUnsafe,
): Buffer {
  const data = msg[key];
  if (!(data instanceof Uint8Array)) return encodeFrame(msg, maxBytes);
  // Copied key by key: deleting from a spread copy would turn it into a slow dictionary object.
  const rest: Record<string, unknown> = {};
  for (const name of Object.keys(msg)) if (name !== key) rest[name] = msg[name];
  let head: Buffer;
  try {
    head = packr.pack(rest);
  } catch (error) {
    throw new FrameError(`cannot encode frame: ${(error as Error).message}`, { cause: error });
  }
  const map = mapHeader(head);
  const count = map.count + 1;
  const newMapHeaderBytes = count <= 0x0f ? 1 : count <= 0xffff ? 3 : 5;
  const keyBytes = encodedKey(key);
  const binHeaderBytes = data.length <= 0xff ? 2 : data.length <= 0xffff ? 3 : 5;
  const bodyLength = newMapHeaderBytes + (head.length - map.length) + keyBytes.length + binHeaderBytes + data.length;
  if (bodyLength > maxBytes) {
    throw new FrameError(`frame of ${bodyLength} bytes exceeds the ${maxBytes}-byte limit`);
  }
  const frame = allocate(HEADER_BYTES + bodyLength);
  let at = frame.writeUInt32BE(bodyLength, 0);
  if (newMapHeaderBytes === 1) at = frame.writeUInt8(0x80 | count, at);
  else if (newMapHeaderBytes === 3) at = frame.writeUInt16BE(count, frame.writeUInt8(0xde, at));
  else at = frame.writeUInt32BE(count, frame.writeUInt8(0xdf, at));
  at += head.copy(frame, at, map.length);
  at += keyBytes.copy(frame, at);
  if (binHeaderBytes === 2) at = frame.writeUInt8(data.length, frame.writeUInt8(0xc4, at));
  else if (binHeaderBytes === 3) at = frame.writeUInt16BE(data.length, frame.writeUInt8(0xc5, at));
  else at = frame.writeUInt32BE(data.length, frame.writeUInt8(0xc6, at));
  frame.set(data, at);
  return frame;
}

/** Decodes the frame body at source[start, end); it must be a msgpack map. */
function decodeBody(source: Buffer, start: number, end: number): Record<string, unknown> {
  if (end === start) throw new FrameError("empty frame body");
  let value: unknown;
  try {
    // Decoding in place (start/end, not a subarray) lets msgpackr reuse one DataView per chunk.
    value = unpackr.unpack(source, { start, end });
  } catch (error) {
    throw new FrameError(`undecodable frame: ${(error as Error).message}`, { cause: error });
  }
  if (!isPlainObject(value)) {
    throw new FrameError(`frame body is not a map (got ${describe(value)})`);
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "array";
  if (value instanceof Uint8Array) return "bin";
  return typeof value === "object" ? (value.constructor?.name ?? "object") : typeof value;
}

/**
 * Turns a byte stream into frames. Chunks are kept as a list and only joined once a
 * whole frame has arrived, so a large frame costs one copy, not one per chunk.
 * After a FrameError the decoder refuses further input: the connection must be closed.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  /** Body length of the frame being assembled; -1 while its header is incomplete. */
  private bodyLength = -1;
  private failed = false;

  constructor(private readonly maxBytes = MAX_FRAME_BYTES) {}

  /** Returns every frame completed by this chunk, in order. */
  push(chunk: Buffer): Record<string, unknown>[] {
    if (this.failed) throw new FrameError("frame decoder is unusable after an earlier error");
    const frames: Record<string, unknown>[] = [];
    try {
      // A header already taken (bodyLength >= 0) leaves nothing buffered but its body still pending.
      if (this.chunks.length === 0 && this.bodyLength < 0) {
        // Common case: nothing buffered, so whole frames are decoded straight out of the chunk.
        const rest = this.decodeWholeFrames(chunk, frames);
        if (rest === chunk.length) return frames;
        chunk = chunk.subarray(rest);
      }
      this.chunks.push(chunk);
      this.bufferedBytes += chunk.length;
      for (;;) {
        if (this.bodyLength < 0) {
          if (this.bufferedBytes < HEADER_BYTES) break;
          this.bodyLength = this.checkLength(this.take(HEADER_BYTES).readUInt32BE(0));
        }
        if (this.bufferedBytes < this.bodyLength) break;
        const body = this.take(this.bodyLength);
        this.bodyLength = -1;
        frames.push(decodeBody(body, 0, body.length));
      }
    } catch (error) {
      this.failed = true;
      this.chunks = [];
      this.bufferedBytes = 0;
      throw error;
    }
    return frames;
  }

  /** Decodes the complete frames at the start of chunk; returns where the first incomplete one starts. */
  private decodeWholeFrames(chunk: Buffer, frames: Record<string, unknown>[]): number {
    let offset = 0;
    while (chunk.length - offset >= HEADER_BYTES) {
      const length = this.checkLength(chunk.readUInt32BE(offset));
      const start = offset + HEADER_BYTES;
      if (chunk.length - start < length) break;
      frames.push(decodeBody(chunk, start, start + length));
      offset = start + length;
    }
    return offset;
  }

  private checkLength(length: number): number {
    if (length > this.maxBytes) {
      throw new FrameError(`frame of ${length} bytes exceeds the ${this.maxBytes}-byte limit`);
    }
    return length;
  }

  /** Removes the next n buffered bytes (n <= bufferedBytes); a view when they lie in one chunk. */
  private take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    this.bufferedBytes -= n;
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    let used = 0; // chunks consumed whole; removed in one splice to stay linear
    while (filled < n) {
      const chunk = this.chunks[used]!;
      const wanted = n - filled;
      if (chunk.length <= wanted) {
        chunk.copy(out, filled);
        filled += chunk.length;
        used++;
      } else {
        chunk.copy(out, filled, 0, wanted);
        filled += wanted;
        this.chunks[used] = chunk.subarray(wanted);
      }
    }
    this.chunks.splice(0, used);
    return out;
  }
}
