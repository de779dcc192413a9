/**
 * A fixed-size byte ring holding the most recent output of one agent.
 *
 * Every byte ever appended has an absolute offset (0 = first byte the agent
 * wrote); the byte at offset `o` lives at index `o % capacity`, so readers can
 * hold on to an offset across appends and learn exactly how much they missed.
 */

export const DEFAULT_RING_BYTES = 1024 * 1024;

export interface RingSlice {
  data: Buffer;
  /** Absolute offset of `data[0]`. */
  offset: number;
}

export class OutputRing {
  readonly capacity: number;
  private readonly buffer: Buffer;
  private total = 0;

  constructor(capacityBytes: number = DEFAULT_RING_BYTES) {
    if (!Number.isInteger(capacityBytes) || capacityBytes <= 0) {
      throw new RangeError(`ring capacity must be a positive integer, got ${capacityBytes}`);
    }
    this.capacity = capacityBytes;
    this.buffer = Buffer.allocUnsafe(capacityBytes);
  }

  /** Total bytes ever appended; the offset the next byte will get. */
  get endOffset(): number {
    return this.total;
  }

  /** Offset of the oldest byte still held. */
  get startOffset(): number {
    return Math.max(0, this.total - this.capacity);
  }

  /** Bytes currently held. */
  get size(): number {
    return this.total - this.startOffset;
  }

  append(chunk: Uint8Array): void {
    const length = chunk.length;
    if (length === 0) return;
    // Only the last `capacity` bytes of an oversized chunk can survive anyway.
    const kept = length > this.capacity ? chunk.subarray(length - this.capacity) : chunk;
    const firstOffset = this.total + (length - kept.length);
    this.copyIn(kept, firstOffset % this.capacity);
    this.total += length;
  }

  /**
   * Bytes from `fromOffset` (clamped into what the ring holds) up to `maxBytes`.
   * The returned offset tells the caller where the data really starts: later than
   * asked when those bytes were already overwritten.
   */
  read(fromOffset: number = this.startOffset, maxBytes: number = Infinity): RingSlice {
    const offset = Math.min(Math.max(fromOffset, this.startOffset), this.total);
    const length = Math.max(0, Math.min(this.total - offset, maxBytes));
    return { data: this.copyOut(offset, length), offset };
  }

  /**
   * Like read, without the copy: a view of the ring's own memory, valid only until the next
   * append. It ends where the ring wraps around, so it can be shorter than asked even
   * when more is held; read on from its end for the rest.
   */
  view(fromOffset: number = this.startOffset, maxBytes: number = Infinity): RingSlice {
    const offset = Math.min(Math.max(fromOffset, this.startOffset), this.total);
    const at = offset % this.capacity;
    const length = Math.max(0, Math.min(this.total - offset, maxBytes, this.capacity - at));
    return { data: this.buffer.subarray(at, at + length), offset };
  }

  /** The last `bytes` bytes held (fewer if the ring holds less). */
  tail(bytes: number): RingSlice {
    return this.read(Math.max(this.startOffset, this.total - bytes));
  }

  /** The last `n` bytes, for prompt detection. */
  lastBytes(n = 256): Buffer {
    return this.tail(n).data;
  }

  private copyIn(src: Uint8Array, at: number): void {
    const firstPart = Math.min(src.length, this.capacity - at);
    this.buffer.set(src.subarray(0, firstPart), at);
    if (firstPart < src.length) this.buffer.set(src.subarray(firstPart), 0);
  }

  private copyOut(offset: number, length: number): Buffer {
    const out = Buffer.allocUnsafe(length);
    if (length === 0) return out;
    const at = offset % this.capacity;
    const firstPart = Math.min(length, this.capacity - at);
    this.buffer.copy(out, 0, at, at + firstPart);
    if (firstPart < length) this.buffer.copy(out, firstPart, 0, length - firstPart);
    return out;
  }
}
