import { CliUsageError } from "./usage-error.js";

/** `--since 7d`, `--since 2026-11-01`, `--since today`: the first UTC day counted. */
export function sinceDay(raw: string | undefined, now = new Date()): string | undefined {
  if (raw === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}$/.test(raw) && !Number.isNaN(Date.parse(`${raw}T00:00:00Z`))) return raw;
  if (raw === "today") return now.toISOString().slice(0, 10);
  const days = /^(\d+)d$/.exec(raw);
  if (days) return new Date(now.getTime() - (Number(days[1]) - 1) * 86_400_000).toISOString().slice(0, 10);
  throw new CliUsageError(`--since expects a day (2026-11-01), "today" or a number of days (7d), got "${raw}"`);
}
