// What an agent's output switched on in the viewer's terminal, so `pu attach` can switch it
// off again on every way out. Left on, a detached user's shell is stuck on the alternate
// screen, with no cursor, or with every mouse movement typed in as escape sequences.

// DEC private modes that are off in a terminal's default state and that programs turn on.
const MODES_OFF_BY_DEFAULT = [
  1, // application cursor keys
  1000, 1002, 1003, 1005, 1006, 1015, // mouse reporting and its encodings
  1004, // focus events
  2004, // bracketed paste
];
const ALTERNATE_SCREEN_MODES = new Set([47, 1047, 1049]);
const CURSOR_VISIBLE = 25;

// CSI ? Pm h|l, and ESC = / ESC > (keypad application / numeric mode).
const MODE_SEQUENCE = /\x1b\[\?([\d;]+)([hl])|\x1b([=>])/g;
// The end of a chunk that may be the start of a sequence split across chunks.
const TRAILING_PARTIAL = /\x1b(\[\??[\d;]*)?$/;

export class TerminalModeTracker {
  private alternateScreen: number | undefined;
  private carry = "";

  /** Reads the agent's output as it is written to the terminal. */
  observe(chunk: Uint8Array): void {
    const text = this.carry + Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
    const partial = TRAILING_PARTIAL.exec(text);
    this.carry = partial ? partial[0].slice(0, 32) : "";
    for (const match of text.matchAll(MODE_SEQUENCE)) {
      if (match[3] !== undefined || match[1] === undefined) continue;
      const on = match[2] === "h";
      for (const param of match[1].split(";")) {
        const mode = Number(param);
        if (!ALTERNATE_SCREEN_MODES.has(mode)) continue;
        this.alternateScreen = on ? mode : undefined;
      }
    }
  }

  /**
   * Bytes that put the terminal back in its default modes. Modes whose default is known are
   * reset unconditionally (the replay may not show where they were set); the alternate screen
   * is left only if the agent entered it, since leaving it otherwise moves the cursor.
   */
  resetSequence(): string {
    const parts = [
      ...(this.alternateScreen !== undefined ? [`\x1b[?${this.alternateScreen}l`] : []),
      `\x1b[?${MODES_OFF_BY_DEFAULT.join(";")}l`,
      "\x1b>", // numeric keypad
      `\x1b[?${CURSOR_VISIBLE}h`,
      "\x1b[0m", // colours and attributes
    ];
    return parts.join("");
  }
}
