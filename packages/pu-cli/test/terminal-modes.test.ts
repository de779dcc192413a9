import { describe, expect, it } from "vitest";
import { TerminalModeTracker } from "../src/terminal-modes.js";

const bytes = (s: string) => Buffer.from(s, "latin1");

describe("TerminalModeTracker", () => {
  it("leaves the alternate screen only when the agent entered it, even across chunks", () => {
    const t = new TerminalModeTracker();
    expect(t.resetSequence()).not.toContain("\x1b[?1049l");
    t.observe(bytes("hello \x1b[?10"));
    t.observe(bytes("49h full screen"));
    expect(t.resetSequence().startsWith("\x1b[?1049l")).toBe(true);
    t.observe(bytes("\x1b[?1049l back"));
    expect(t.resetSequence()).not.toContain("\x1b[?1049l");
  });

  it("always turns off mouse reporting, application keys and bracketed paste, and shows the cursor", () => {
    const reset = new TerminalModeTracker().resetSequence();
    expect(reset).toContain("\x1b[?1;1000;1002;1003;1005;1006;1015;1004;2004l");
    expect(reset).toContain("\x1b>");
    expect(reset).toContain("\x1b[?25h");
  });
});
