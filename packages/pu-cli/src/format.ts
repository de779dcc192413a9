import { escapeControlCharacters } from "@pu/core/names";
/** "42s", "3m", "2h05m", "3d4h": short enough for a table column. */
export function formatDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? String(s % 60).padStart(2, "0") + "s" : ""}`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}

const ANSI = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export type Style = keyof typeof ANSI;

export function paint(text: string, style: Style, color: boolean): string {
  return color ? `\x1b[${ANSI[style]}m${text}\x1b[0m` : text;
}

/** Fits a table cell; control characters (from names stored before they were refused) are shown escaped. */
export function truncate(raw: string, width: number): string {
  const text = escapeControlCharacters(raw);
  return text.length <= width ? text : text.slice(0, Math.max(0, width - 1)) + "…";
}
