import { describe, expect, it } from "vitest";
import { effectiveStatus, endsWithPrompt, isAlive, PROMPT_WINDOW_BYTES } from "../src/status.js";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const busy = bytes("compiling module 3 of 9\n");

describe("effectiveStatus", () => {
  it("is broken once an exit code is present, even 0, even at a prompt or suspended", () => {
    expect(effectiveStatus({ exitCode: 0, output: busy, idleSeconds: 0 })).toBe("broken");
    expect(effectiveStatus({ exitCode: 137, output: bytes("$ "), idleSeconds: 0, suspended: true })).toBe("broken");
  });

  it("ignores a null or undefined exit code", () => {
    expect(effectiveStatus({ exitCode: null, output: busy, idleSeconds: 0 })).toBe("streaming");
    expect(effectiveStatus({ exitCode: undefined, output: busy, idleSeconds: 0 })).toBe("streaming");
  });

  it("is waiting when suspended", () => {
    expect(effectiveStatus({ output: busy, idleSeconds: 0, suspended: true })).toBe("waiting");
  });

  it("is waiting at a shell prompt", () => {
    expect(effectiveStatus({ output: bytes("done\nuser@host:~/p$ "), idleSeconds: 0 })).toBe("waiting");
  });

  it("is streaming while output is fresh and there is no prompt", () => {
    expect(effectiveStatus({ output: busy, idleSeconds: 1, suspended: false })).toBe("streaming");
  });

  it("turns waiting strictly after the idle threshold", () => {
    expect(effectiveStatus({ output: busy, idleSeconds: 29.999 })).toBe("streaming");
    expect(effectiveStatus({ output: busy, idleSeconds: 30 })).toBe("streaming");
    expect(effectiveStatus({ output: busy, idleSeconds: 30.001 })).toBe("waiting");
  });

  it("honours a configured threshold", () => {
    expect(effectiveStatus({ output: busy, idleSeconds: 5, idleThresholdSeconds: 5 })).toBe("streaming");
    expect(effectiveStatus({ output: busy, idleSeconds: 5.5, idleThresholdSeconds: 5 })).toBe("waiting");
    expect(effectiveStatus({ output: busy, idleSeconds: 31, idleThresholdSeconds: 60 })).toBe("streaming");
  });

  it("isAlive is true for streaming and waiting only", () => {
    expect(isAlive("streaming")).toBe(true);
    expect(isAlive("waiting")).toBe(true);
    expect(isAlive("broken")).toBe(false);
  });
});

describe("endsWithPrompt", () => {
  it.each(["$ ", "% ", "# ", "> ", "~/p $ ", "zsh% ", "root# ", ">>> ", "$   \n", "> \r\n  ", "$ \t"])(
    "detects %j",
    (tail) => {
      expect(endsWithPrompt(bytes(`output\n${tail}`))).toBe(true);
    },
  );

  it.each(["$", "output\n$", "price: 5$\n", "50%\n", "a -> b", "#", "done\n", "", "   \n", "$x "])(
    "does not detect %j",
    (tail) => {
      expect(endsWithPrompt(bytes(tail))).toBe(false);
    },
  );

  it("finds a prompt ending exactly at the end of a 256-byte window", () => {
    const filler = "x".repeat(PROMPT_WINDOW_BYTES - 2);
    const exact = bytes(`${"older output\n".repeat(50)}${filler}$ `);
    expect(exact.length).toBeGreaterThan(PROMPT_WINDOW_BYTES);
    expect(endsWithPrompt(exact)).toBe(true);
  });

  it("only looks at the last 256 bytes", () => {
    // `$` followed by 256 spaces sits one byte before the window; with 255 it is the window's first byte.
    const farPrompt = bytes(`$${" ".repeat(PROMPT_WINDOW_BYTES)}`);
    expect(endsWithPrompt(farPrompt)).toBe(false);
    const nearPrompt = bytes(`$${" ".repeat(PROMPT_WINDOW_BYTES - 1)}`);
    expect(endsWithPrompt(nearPrompt)).toBe(true);
  });

  it("decodes a multi-byte character cut at the window start lossily", () => {
    // "é" is 2 bytes; place it so the window starts on its second byte.
    const tail = `${"y".repeat(PROMPT_WINDOW_BYTES - 3)}% `;
    const output = bytes(`é${tail}`);
    expect(output.length).toBe(PROMPT_WINDOW_BYTES + 1);
    expect(endsWithPrompt(output)).toBe(true);
  });

  it("tolerates invalid UTF-8 before the prompt", () => {
    const output = new Uint8Array([0xff, 0xfe, 0xc3, 0x28, 0x0a, ...bytes("host$ ")]);
    expect(endsWithPrompt(output)).toBe(true);
    expect(effectiveStatus({ output, idleSeconds: 0 })).toBe("waiting");
  });

  it("does not take invalid UTF-8 at the very end for a prompt", () => {
    expect(endsWithPrompt(new Uint8Array([...bytes("$"), 0xff]))).toBe(false);
  });
});
