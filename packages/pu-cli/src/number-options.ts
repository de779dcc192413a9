import { CliUsageError } from "./usage-error.js";

/** A whole-number option (`--quorum 2`): undefined when absent, a usage error naming the flag when wrong. */
export function wholeNumberOption(flag: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new CliUsageError(`${flag} expects a whole number of at least ${min}, got "${raw}"`);
  return Number(raw);
}

/** A positive number option (`--timeout 0.5`). */
export function positiveNumberOption(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) <= 0) throw new CliUsageError(`${flag} expects a positive number, got "${raw}"`);
  return Number(raw);
}

/** `{ [key]: value }` for a request's fields, or nothing when the option was not given. */
export function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}
