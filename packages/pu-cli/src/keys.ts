import { CliUsageError } from "./usage-error.js";

// Named keys for `pu send --keys` and `pu attach --detach-key`. Byte sequences follow
// what xterm sends in normal (non-application) cursor mode, which is what agents' TUIs expect.
const NAMED_KEYS: Record<string, string> = {
  Enter: "\r",
  Tab: "\t",
  BTab: "\x1b[Z",
  Escape: "\x1b",
  Backspace: "\x7f",
  Space: " ",
  Up: "\x1b[A",
  Down: "\x1b[B",
  Right: "\x1b[C",
  Left: "\x1b[D",
  Home: "\x1b[H",
  End: "\x1b[F",
  PageUp: "\x1b[5~",
  PageDown: "\x1b[6~",
  Delete: "\x1b[3~",
};

const KEY_ALIASES: Record<string, string> = { Esc: "Escape", Return: "Enter", Del: "Delete", BSpace: "Backspace" };

// Control characters beyond C-a..C-z that a terminal can produce with Ctrl held.
const CONTROL_PUNCTUATION: Record<string, number> = { "@": 0x00, "[": 0x1b, "\\": 0x1c, "]": 0x1d, "^": 0x1e, _: 0x1f };

function validKeyNames(): string[] {
  return ["C-a..C-z", "C-@", "C-[", "C-\\", "C-]", "C-^", "C-_", ...Object.keys(NAMED_KEYS)];
}

/** The byte of a `C-x` style control key, or undefined when `name` is not one. */
function controlKeyByte(name: string): number | undefined {
  const m = /^C-(.)$/i.exec(name);
  if (!m) return undefined;
  const ch = m[1]!;
  const lower = ch.toLowerCase();
  if (lower >= "a" && lower <= "z") return lower.charCodeAt(0) - 0x60;
  return CONTROL_PUNCTUATION[ch];
}

/** Bytes for one key name (case-insensitive), or undefined when unknown. */
export function keyBytes(name: string): string | undefined {
  const control = controlKeyByte(name);
  if (control !== undefined) return String.fromCharCode(control);
  const wanted = name.toLowerCase();
  for (const [alias, target] of Object.entries(KEY_ALIASES)) {
    if (alias.toLowerCase() === wanted) return NAMED_KEYS[target];
  }
  for (const [key, bytes] of Object.entries(NAMED_KEYS)) {
    if (key.toLowerCase() === wanted) return bytes;
  }
  return undefined;
}

/** Parses a whitespace-separated key list such as "C-c Enter Up" into the bytes to send. */
export function parseKeys(spec: string): Buffer {
  const names = spec.split(/\s+/).filter(Boolean);
  if (names.length === 0) throw new CliUsageError("--keys needs at least one key name");
  const unknown = names.filter((n) => keyBytes(n) === undefined);
  if (unknown.length > 0) {
    throw new CliUsageError(
      `unknown key name${unknown.length > 1 ? "s" : ""} ${unknown.map((n) => `"${n}"`).join(", ")}; valid keys: ${validKeyNames().join(" ")}`,
    );
  }
  return Buffer.from(names.map((n) => keyBytes(n)!).join(""), "latin1");
}

/** The single byte that detaches `pu attach`; only control keys qualify (they never appear in typed text). */
export function parseDetachKey(name: string): number {
  const byte = controlKeyByte(name.trim());
  if (byte === undefined) {
    throw new CliUsageError(`--detach-key must be a control key such as C-\\ or C-q, not "${name}"`);
  }
  // ESC starts every arrow and function key sequence: it would detach on the first arrow key.
  if (byte === 0x1b) throw new CliUsageError(`--detach-key ${name.trim()} is Escape, which arrow and function keys send; choose another`);
  return byte;
}
