import { describe, expect, it } from "vitest";
import { keyBytes, parseDetachKey, parseKeys } from "../src/keys.js";
import { CliUsageError } from "../src/usage-error.js";

describe("parseKeys", () => {
  it("maps control keys, Enter and arrows to the bytes a terminal sends", () => {
    expect(parseKeys("C-c Enter Tab Escape").toString("latin1")).toBe("\x03\r\t\x1b");
    expect(parseKeys("Up Down Right Left").toString("latin1")).toBe("\x1b[A\x1b[B\x1b[C\x1b[D");
    expect(parseKeys("Home End PageUp PageDown Delete Backspace Space").toString("latin1")).toBe(
      "\x1b[H\x1b[F\x1b[5~\x1b[6~\x1b[3~\x7f ",
    );
  });

  it("covers the whole C-a..C-z range and is case-insensitive", () => {
    expect(parseKeys("C-a C-z").toString("latin1")).toBe("\x01\x1a");
    expect(parseKeys("c-D enter ESC").toString("latin1")).toBe("\x04\r\x1b");
    expect(keyBytes("C-\\")).toBe("\x1c");
  });

  it("tolerates extra whitespace between names", () => {
    expect(parseKeys("  C-c \t Enter ").toString("latin1")).toBe("\x03\r");
  });

  it("rejects unknown names with a usage error listing the valid ones", () => {
    expect(() => parseKeys("C-c Ctrl-C Bogus")).toThrow(CliUsageError);
    expect(() => parseKeys("Bogus")).toThrow(/unknown key name "Bogus".*valid keys: C-a\.\.C-z.*Enter.*PageDown/);
    expect(() => parseKeys("C-cc")).toThrow(/"C-cc"/);
    expect(() => parseKeys("   ")).toThrow(CliUsageError);
  });
});

describe("parseDetachKey", () => {
  it("accepts C-x style control keys", () => {
    expect(parseDetachKey("C-\\")).toBe(0x1c);
    expect(parseDetachKey("C-q")).toBe(0x11);
    expect(parseDetachKey("C-]")).toBe(0x1d);
  });

  it("refuses keys that could appear in typed text", () => {
    expect(() => parseDetachKey("q")).toThrow(CliUsageError);
    expect(() => parseDetachKey("Enter")).toThrow(/control key/);
  });

  it("refuses C-[ (Escape), which every arrow key sends", () => {
    expect(() => parseDetachKey("C-[")).toThrow(/is Escape/);
  });
});
