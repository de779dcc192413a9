import { describe, expect, it } from "vitest";
import { OutputRing } from "../src/session/output-ring.js";

const text = (buf: Buffer) => buf.toString("latin1");

describe("OutputRing", () => {
  it("hands back what was appended, with absolute offsets", () => {
    const ring = new OutputRing(16);
    ring.append(Buffer.from("hello "));
    ring.append(Buffer.from("world"));
    expect(ring.startOffset).toBe(0);
    expect(ring.endOffset).toBe(11);
    expect(text(ring.read().data)).toBe("hello world");
    const { data, offset } = ring.read(6);
    expect([text(data), offset]).toEqual(["world", 6]);
    expect(text(ring.read(2, 3).data)).toBe("llo");
  });

  it("keeps only the newest bytes once it wraps, and offsets keep counting", () => {
    const ring = new OutputRing(10);
    ring.append(Buffer.from("0123456789"));
    ring.append(Buffer.from("abcd"));
    expect(ring.endOffset).toBe(14);
    expect(ring.startOffset).toBe(4);
    expect(text(ring.read().data)).toBe("456789abcd");
    // A read across the physical end of the buffer comes back in order.
    expect(text(ring.read(8, 4).data)).toBe("89ab");
  });

  it("clamps a read of overwritten bytes up to the oldest byte held", () => {
    const ring = new OutputRing(8);
    ring.append(Buffer.from("abcdefghijkl"));
    const { data, offset } = ring.read(0);
    expect(offset).toBe(4);
    expect(text(data)).toBe("efghijkl");
  });

  it("returns nothing (at the end offset) for a read past the end", () => {
    const ring = new OutputRing(8);
    ring.append(Buffer.from("abc"));
    const { data, offset } = ring.read(100);
    expect(data.length).toBe(0);
    expect(offset).toBe(3);
  });

  it("keeps the tail of a chunk larger than the whole ring", () => {
    const ring = new OutputRing(4);
    ring.append(Buffer.from("xy"));
    ring.append(Buffer.from("0123456789"));
    expect(ring.endOffset).toBe(12);
    expect(ring.startOffset).toBe(8);
    expect(text(ring.read().data)).toBe("6789");
    ring.append(Buffer.from("A"));
    expect(text(ring.read().data)).toBe("789A");
  });

  it("copies on append, so the caller may reuse its buffer", () => {
    const ring = new OutputRing(8);
    const chunk = Buffer.from("abc");
    ring.append(chunk);
    chunk.fill(0x7a);
    expect(text(ring.read().data)).toBe("abc");
  });

  it("tail and lastBytes return the newest bytes", () => {
    const ring = new OutputRing(8);
    ring.append(Buffer.from("one two three"));
    expect(text(ring.tail(5).data)).toBe("three");
    expect(ring.tail(5).offset).toBe(8);
    expect(text(ring.tail(100).data)).toBe("wo three");
    expect(text(ring.lastBytes(3))).toBe("ree");
  });

  it("matches a straightforward model over many random appends", () => {
    const ring = new OutputRing(37);
    let all = "";
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 500; i++) {
      const length = Math.floor(random() * 60);
      const piece = Array.from({ length }, (_, k) => String.fromCharCode(97 + ((i + k) % 26))).join("");
      ring.append(Buffer.from(piece));
      all += piece;
      const from = Math.floor(random() * all.length);
      const { data, offset } = ring.read(from, 20);
      const start = Math.max(from, all.length - 37);
      expect(offset).toBe(Math.min(start, all.length));
      expect(text(data)).toBe(all.slice(start, start + 20));
    }
    expect(ring.endOffset).toBe(all.length);
  });

  it("view() hands out the held bytes in place: up to the wrap point, then the rest from where it ended", () => {
    const ring = new OutputRing(10);
    ring.append(Buffer.from("0123456789abcd")); // holds 456789abcd; "abcd" sits at the start of the buffer
    const first = ring.view(5);
    expect(first.offset).toBe(5);
    expect(text(first.data)).toBe("56789");
    const second = ring.view(first.offset + first.data.length);
    expect(text(second.data)).toBe("abcd");
    expect(ring.view(second.offset + second.data.length).data.length).toBe(0);
    // Clamped like read(): overwritten bytes are skipped, and maxBytes is honoured.
    expect(ring.view(0, 3)).toMatchObject({ offset: 4 });
    expect(text(ring.view(0, 3).data)).toBe("456");
    // A view is the ring's own memory: the next append shows through it.
    const live = ring.view(10, 2);
    ring.append(Buffer.from("XYZWVUTSRQ"));
    expect(text(live.data)).not.toBe("ab");
  });

  it("view() pieces put together equal read() over many random appends", () => {
    const ring = new OutputRing(29);
    let seed = 11;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 300; i++) {
      ring.append(Buffer.from(Array.from({ length: Math.floor(random() * 40) }, (_, k) => 65 + ((i + k) % 26))));
      const from = Math.floor(random() * (ring.endOffset + 5));
      const expected = ring.read(from);
      const pieces: Buffer[] = [];
      let at = expected.offset;
      while (at < ring.endOffset) {
        const piece = ring.view(at, 1 + Math.floor(random() * 30));
        expect(piece.offset).toBe(at);
        expect(piece.data.length).toBeGreaterThan(0);
        pieces.push(Buffer.from(piece.data));
        at += piece.data.length;
      }
      expect(text(Buffer.concat(pieces))).toBe(text(expected.data));
    }
  });
});

