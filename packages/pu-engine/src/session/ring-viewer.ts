/**
 * A viewer of a session's output (an attached client): a cursor into the ring that replays
 * what the ring holds and then follows live output, waiting while its sink is over its bound.
 */
import type { OutputRing } from "./output-ring.js";

/** While output streams, viewers are fed each time this much has arrived (see AgentSession's scheduleViewerPump)... */
export const VIEWER_BATCH_BYTES = 64 * 1024;
/**
 * A pump sends at most this much per event: room for a whole batch plus the read that
 * completed it, so a batch goes out as one event instead of a full one and a small leftover.
 */
const VIEWER_CHUNK_BYTES = 2 * VIEWER_BATCH_BYTES;
/** A viewer stops being fed while its sink holds this much unsent data. */
const VIEWER_MAX_BUFFERED_BYTES = 2 * 1024 * 1024;
/** Where a viewer's bytes go: typically one attached client connection. */
export interface ViewerSink {
  /**
   * Returns false when the sink is over its high-water mark (the viewer then waits for onDrain).
   * `data` is a view of the ring, valid only during the call: a sink that keeps it must copy it.
   */
  sendOutput(data: Buffer, offset: number): boolean;
  sendNotice(message: string, skippedBytes: number): void;
  sendExit(exitCode: number): void;
  /** Bytes sent but not yet flushed to the client. */
  bufferedBytes(): number;
  /**
   * One-shot: call `cb` once, the next time the sink has drained. The viewer
   * registers again each time it pauses. (Calling it more often is harmless.)
   */
  onDrain(cb: () => void): void;
}

export interface Viewer {
  /** Offset the replay starts at (later than asked when the ring no longer holds it). */
  readonly startOffset: number;
  /** Offset of the next byte this viewer will be sent. */
  readonly nextOffset: number;
  readonly closed: boolean;
  close(): void;
}

/** What a viewer reads of its session. */
interface ViewedSession {
  readonly ring: OutputRing;
  readonly exitCode: number | null;
}

/** A viewer's cursor into the ring; holds no copy of the output itself. */
export class RingViewer implements Viewer {
  readonly startOffset: number;
  private next: number;
  private started = false;
  private pumping = false;
  private waitingForDrain = false;
  private _closed = false;

  constructor(
    private readonly session: ViewedSession,
    private readonly sink: ViewerSink,
    start: number,
    private readonly onClose: () => void,
  ) {
    this.startOffset = start;
    this.next = start;
  }

  get nextOffset(): number {
    return this.next;
  }

  get closed(): boolean {
    return this._closed;
  }

  start(): void {
    this.started = true;
    this.pump();
  }

  close(): void {
    if (this._closed) return;
    this._closed = true;
    this.onClose();
  }

  pump(): void {
    // Should a sink ever fail to report its drain, new output still revives the viewer
    // once the sink is back under the bound.
    if (this.waitingForDrain && this.sink.bufferedBytes() < VIEWER_MAX_BUFFERED_BYTES) this.waitingForDrain = false;
    if (!this.started || this._closed || this.pumping || this.waitingForDrain) return;
    this.pumping = true;
    try {
      this.pumpLoop();
    } finally {
      this.pumping = false;
    }
  }

  private pumpLoop(): void {
    const ring = this.session.ring;
    while (!this._closed) {
      if (this.next < ring.startOffset) {
        const skipped = ring.startOffset - this.next;
        this.next = ring.startOffset;
        this.sink.sendNotice(`viewer fell behind; skipped ${skipped} bytes`, skipped);
      }
      if (this.next >= ring.endOffset) {
        const exitCode = this.session.exitCode;
        if (exitCode !== null) {
          this.sink.sendExit(exitCode);
          this.close();
        }
        return;
      }
      if (this.sink.bufferedBytes() >= VIEWER_MAX_BUFFERED_BYTES) {
        this.waitForDrain();
        return;
      }
      // No copy here: the sink encodes the bytes straight out of the ring before it returns.
      const { data, offset } = ring.view(this.next, VIEWER_CHUNK_BYTES);
      this.next = offset + data.length;
      if (!this.sink.sendOutput(data, offset)) {
        this.waitForDrain();
        return;
      }
    }
  }

  private waitForDrain(): void {
    this.waitingForDrain = true;
    this.sink.onDrain(() => {
      if (!this.waitingForDrain) return;
      this.waitingForDrain = false;
      this.pump();
    });
  }
}

