import { describe, expect, it } from "vitest";
import { ActivityTracker, isMeaningfulOutput } from "../src/activity.js";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("isMeaningfulOutput", () => {
  it.each([
    ["plain text", "hello world"],
    ["new lines of content", "line one\nline two\n"],
    ["a redraw with different text", "\rBuild finished in 3s"],
    ["coloured text", "\x1b[32mPASS\x1b[0m test/a.test.ts\n"],
    ["a number on its own line", "\n42\n"],
  ])("counts %s", (_label, chunk) => {
    expect(isMeaningfulOutput(chunk, "⠋ Thinking… 12s")).toBe(true);
  });

  it.each([
    ["a spinner redraw with a new elapsed time", "\r⠙ Thinking… 13s"],
    ["a star spinner redraw", "\r✶ Thinking… 12s"],
    ["erase line and return to column 1", "\x1b[2K\x1b[1G"],
    ["colour changes only", "\x1b[1m\x1b[0m\x1b[38;5;208m"],
    ["cursor visibility and modes", "\x1b[?25l\x1b[?2004h\x1b[?25h"],
    ["a window title update", "\x1b]0;⠋ claude\x07"],
    ["an OSC terminated by ST", "\x1b]2;title\x1b\\"],
    ["bare carriage returns and whitespace", "\r  \r\n\t\n"],
    ["a bell and other control characters", "\x07\x00\x0e"],
    ["backspace spinner", "\b|\b/\b-\b\\"],
    ["a redraw of the same line with spinner glyph changes", "\r* Thinking… 12s"],
  ])("ignores %s", (_label, chunk) => {
    expect(isMeaningfulOutput(chunk, "⠋ Thinking… 12s")).toBe(false);
  });

  it("accepts bytes and decodes them lossily", () => {
    expect(isMeaningfulOutput(bytes("\r⠙ Thinking… 13s"), "⠋ Thinking… 12s")).toBe(false);
    expect(isMeaningfulOutput(new Uint8Array([0x68, 0x69, 0xff]), "")).toBe(true);
  });

  it("counts text appended to the current line but not a spinner appended to it", () => {
    expect(isMeaningfulOutput("ing the tests", "Runn")).toBe(true);
    expect(isMeaningfulOutput(" ⠋", "Running the tests")).toBe(false);
  });
});

describe("ActivityTracker", () => {
  it("starts idle time at construction and resets it on meaningful output only", () => {
    const tracker = new ActivityTracker(1_000);
    expect(tracker.idleSeconds(31_000)).toBe(30);
    expect(tracker.observe(bytes("⠋ Thinking… 1s"), 2_000)).toBe(true);
    expect(tracker.lastMeaningfulAt).toBe(2_000);
    for (let second = 2; second < 60; second++) {
      const glyph = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[second % 10];
      expect(tracker.observe(bytes(`\r${glyph} Thinking… ${second}s`), 1_000 * (second + 1))).toBe(false);
    }
    expect(tracker.idleSeconds(62_000)).toBe(60);
    expect(tracker.observe(bytes("\r\x1b[2KI fixed the bug in login.ts\n"), 63_000)).toBe(true);
    expect(tracker.idleSeconds(63_500)).toBe(0.5);
  });

  it("ignores a multi-line frame redrawn in place (Ink-style) with only a timer changing", () => {
    const tracker = new ActivityTracker(0);
    const frame = (n: number) => `╭────────╮\n│ ✻ Working (${n}s · esc to interrupt) │\n╰────────╯`;
    const redraw = (n: number) => `\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[G${frame(n)}`;
    expect(tracker.observe(bytes(frame(1)), 1_000)).toBe(true);
    for (let n = 2; n < 40; n++) expect(tracker.observe(bytes(redraw(n)), n * 1_000)).toBe(false);
    expect(tracker.observe(bytes(`\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[G● Edited src/login.ts\n${frame(40)}`), 40_000)).toBe(
      true,
    );
    expect(tracker.lastMeaningfulAt).toBe(40_000);
  });

  it("handles escape sequences and UTF-8 characters split across chunks", () => {
    const tracker = new ActivityTracker(0);
    expect(tracker.observe(bytes("⠋ Thinking… 1s"), 1)).toBe(true);
    // "\r⠙" split inside both an escape sequence and the 3-byte braille glyph.
    const whole = bytes("\x1b[2K\r⠙ Thinking… 2s");
    expect(tracker.observe(whole.subarray(0, 2), 2)).toBe(false);
    expect(tracker.observe(whole.subarray(2, 6), 3)).toBe(false);
    expect(tracker.observe(whole.subarray(6), 4)).toBe(false);
    const title = bytes("\x1b]0;a very long window title\x07");
    expect(tracker.observe(title.subarray(0, 10), 5)).toBe(false);
    expect(tracker.observe(title.subarray(10), 6)).toBe(false);
    expect(tracker.lastMeaningfulAt).toBe(1);
  });

  it("counts ordinary shell output line by line", () => {
    const tracker = new ActivityTracker(0);
    expect(tracker.observe(bytes("$ "), 1)).toBe(true);
    expect(tracker.observe(bytes("ls\r\n"), 2)).toBe(true);
    expect(tracker.observe(bytes("README.md  src\r\n$ "), 3)).toBe(true);
    expect(tracker.observe(bytes("\x1b[?2004h"), 4)).toBe(false);
    expect(tracker.lastMeaningfulAt).toBe(3);
  });
});
