import { describe, expect, it } from "vitest";
import { FrameDecoder, FrameError, MAX_FRAME_BYTES, encodeFrame, encodeFrameWithBinary } from "../src/frame.js";

function rawFrame(body: Buffer | number[]): Buffer {
  const bytes = Buffer.from(body);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(bytes.length, 0);
  return Buffer.concat([header, bytes]);
}

describe("frame codec", () => {
  it("decodes several frames fed one byte at a time", () => {
    const messages = [
      { type: "hello", id: 1, protocolVersion: 1, client: "test" },
      { type: "status", id: 2, projectRoot: "/tmp/ü-project" },
      { type: "ok", id: "x", result: { nested: [1, 2, { deep: true }], big: 2 ** 40 + 3 } },
    ];
    const stream = Buffer.concat(messages.map((m) => encodeFrame(m)));
    const decoder = new FrameDecoder();
    const decoded: unknown[] = [];
    for (let i = 0; i < stream.length; i++) decoded.push(...decoder.push(stream.subarray(i, i + 1)));
    expect(decoded).toEqual(messages);
  });

  it("decodes many frames packed into one chunk, and a chunk that ends mid-frame", () => {
    const messages = Array.from({ length: 50 }, (_, i) => ({ type: "input", id: i, agentId: "a", data: Buffer.from([i]) }));
    const stream = Buffer.concat(messages.map((m) => encodeFrame(m)));
    const decoder = new FrameDecoder();
    const cut = stream.length - 7;
    const first = decoder.push(stream.subarray(0, cut));
    expect(first).toHaveLength(49);
    const rest = decoder.push(stream.subarray(cut));
    expect([...first, ...rest]).toEqual(messages);
  });

  it("reassembles a large frame split across many chunks", () => {
    const data = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < data.length; i += 4096) data[i] = i % 251;
    const frame = encodeFrame({ type: "output", id: 7, agentId: "a", data, offset: 0 });
    const decoder = new FrameDecoder();
    const decoded: Record<string, unknown>[] = [];
    for (let i = 0; i < frame.length; i += 65536) decoded.push(...decoder.push(frame.subarray(i, i + 65536)));
    expect(decoded).toHaveLength(1);
    expect(Buffer.isBuffer(decoded[0]!.data)).toBe(true);
    expect((decoded[0]!.data as Buffer).equals(data)).toBe(true);
  });

  it("keeps binary fields binary: Buffer and Uint8Array come back as Buffer views, not copies", () => {
    const frame = encodeFrame({ type: "output", id: 1, data: new Uint8Array([0, 255, 27, 91]), raw: Buffer.from("\x1b[2J") });
    const [decoded] = new FrameDecoder().push(frame) as [Record<string, unknown>];
    expect(Buffer.isBuffer(decoded.data)).toBe(true);
    expect([...(decoded.data as Buffer)]).toEqual([0, 255, 27, 91]);
    expect((decoded.raw as Buffer).toString()).toBe("\x1b[2J");
    // A frame inside one chunk is decoded in place: the bytes are a view of that chunk.
    expect((decoded.data as Buffer).buffer).toBe(frame.buffer);
  });

  it("leaves undefined fields out of the map", () => {
    const [decoded] = new FrameDecoder().push(encodeFrame({ type: "status", id: 1, agentId: undefined }));
    expect(decoded).toEqual({ type: "status", id: 1 });
    expect(Object.hasOwn(decoded!, "agentId")).toBe(false);
  });

  it("refuses an oversize length prefix from the header alone", () => {
    const decoder = new FrameDecoder();
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1024 * 1024 * 1024, 0); // 1 GiB announced, not a byte of it sent
    expect(() => decoder.push(header)).toThrow(FrameError);
    // The decoder is done: the connection it served must be closed.
    expect(() => decoder.push(encodeFrame({ type: "health", id: 1 }))).toThrow(FrameError);
  });

  it("honours a custom limit and accepts a frame of exactly the limit", () => {
    const body = encodeFrame({ type: "x", pad: "a".repeat(100) }).subarray(4);
    const exact = new FrameDecoder(body.length);
    expect(exact.push(rawFrame(body))).toHaveLength(1);
    const tooSmall = new FrameDecoder(body.length - 1);
    expect(() => tooSmall.push(rawFrame(body).subarray(0, 4))).toThrow(/exceeds/);
    expect(MAX_FRAME_BYTES).toBe(16 * 1024 * 1024);
  });

  it("rejects garbage and non-map bodies with FrameError instead of crashing", () => {
    expect(() => new FrameDecoder().push(rawFrame([0xc1, 0xc1, 0xc1]))).toThrow(FrameError);
    expect(() => new FrameDecoder().push(rawFrame([0x93, 1, 2, 3]))).toThrow(/not a map/); // [1, 2, 3]
    expect(() => new FrameDecoder().push(rawFrame([0xa2, 0x68, 0x69]))).toThrow(/not a map/); // "hi"
    expect(() => new FrameDecoder().push(rawFrame([]))).toThrow(FrameError);
    // Truncated map: claims two entries, holds one.
    expect(() => new FrameDecoder().push(rawFrame([0x82, 0xa1, 0x61, 0x01]))).toThrow(FrameError);
    // A valid map followed by trailing bytes inside the same frame.
    expect(() => new FrameDecoder().push(rawFrame([0x80, 0x00]))).toThrow(FrameError);
  });

  it("refuses to encode a message larger than the limit", () => {
    expect(() => encodeFrame({ data: Buffer.alloc(2048) }, 1024)).toThrow(FrameError);
  });

  describe("encodeFrameWithBinary", () => {
    const pattern = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) % 256));

    // Lengths at each msgpack bin header's edges: bin8, bin16, bin32.
    it.each([0, 1, 255, 256, 65535, 65536, 70_000])("decodes to the same map as encodeFrame, %i data bytes", (length) => {
      const msg = { type: "output", id: "stream-7", agentId: "a1b2c3", data: pattern(length), offset: 2 ** 40 + 5 };
      const [viaBinary] = new FrameDecoder().push(encodeFrameWithBinary(msg, "data"));
      const [viaPackr] = new FrameDecoder().push(encodeFrame(msg));
      expect(viaBinary).toEqual(viaPackr);
      expect((viaBinary!.data as Buffer).equals(msg.data)).toBe(true);
    });

    it("counts the binary field in a map that outgrows a fixmap", () => {
      const msg: Record<string, unknown> = { type: "output", id: 1, data: pattern(10) };
      for (let i = 0; i < 20; i++) msg[`k${i}`] = i;
      const [decoded] = new FrameDecoder().push(encodeFrameWithBinary(msg, "data"));
      expect(Object.keys(decoded!)).toHaveLength(23);
      expect(decoded).toMatchObject({ k0: 0, k19: 19, type: "output" });
    });

    it("copies the bytes: changing the source after encoding changes nothing", () => {
      const source = Buffer.from("before");
      const frame = encodeFrameWithBinary({ type: "output", id: 1, data: source }, "data");
      source.write("after!");
      const [decoded] = new FrameDecoder().push(frame);
      expect((decoded!.data as Buffer).toString()).toBe("before");
    });

    it("builds the frame in the memory allocate gives it", () => {
      const backing = Buffer.alloc(1024);
      const frame = encodeFrameWithBinary({ type: "output", id: 1, data: pattern(100) }, "data", MAX_FRAME_BYTES, (size) => backing.subarray(0, size));
      expect(frame.buffer).toBe(backing.buffer);
      expect(new FrameDecoder().push(frame)[0]).toMatchObject({ type: "output", id: 1 });
    });

    it("refuses a frame over the limit", () => {
      expect(() => encodeFrameWithBinary({ type: "output", id: 1, data: pattern(2000) }, "data", 1000)).toThrow(FrameError);
    });

    it("encodes a message without binary data at that key like encodeFrame", () => {
      const msg = { type: "exit", id: 3, exitCode: 0 };
      expect(new FrameDecoder().push(encodeFrameWithBinary(msg, "data"))).toEqual([msg]);
    });
  });
});
