// When does a schedule fire next? Named recurrences keep the wall-clock time of
// `startAt` in the schedule's time zone (a "daily 09:00" stays 09:00 across a
// DST change). Everything that maps wall-clock times to instants is cron-parser
// in the schedule's zone: a cron expression as written, a named recurrence as
// the cron expression it stands for ("daily" from a 09:00 start is `0 0 9 * * *`),
// and a startAt without offset as a one-date expression.
//
// Wall-clock rules (cron-parser's, the same as Temporal's "compatible" mode):
// - a time that does not exist (spring-forward gap) moves forward by the length
//   of the gap: 02:30 on a day that jumps 02:00 → 03:00 fires at 03:30;
// - a time that happens twice (fall-back) fires once, at its first occurrence.
// `hourly` is every 60 minutes from startAt, so it keeps startAt's minute past
// the hour in every zone whose offsets are whole hours and never skips or
// doubles an hour around a DST change.
import { CronExpressionParser } from "cron-parser";
import { PuError } from "./errors.js";

export const NAMED_RECURRENCES = ["none", "hourly", "daily", "weekdays", "weekly", "monthly"] as const;
export type NamedRecurrence = (typeof NAMED_RECURRENCES)[number];

export interface RecurrenceSpec {
  /** A named recurrence or a cron expression (5 fields, or 6 with seconds). */
  recurrence: string;
  /** ISO 8601. With `Z` or an offset it is an instant; without, a wall-clock time in `timeZone`. */
  startAt: string | Date;
  /** IANA zone; default the local zone of the process. */
  timeZone?: string | undefined;
}

const HOUR_MS = 3_600_000;

export function isNamedRecurrence(value: string): value is NamedRecurrence {
  return (NAMED_RECURRENCES as readonly string[]).includes(value);
}

export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function isValidTimeZone(zone: string): boolean {
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

/** Throws CONFIG_ERROR naming the expression when it is neither a named recurrence nor valid cron. */
export function validateRecurrence(recurrence: string): void {
  if (isNamedRecurrence(recurrence)) return;
  parseCron(recurrence, new Date(0), "UTC");
}

/**
 * The first occurrence strictly after `after` and not before `startAt`,
 * or null when there is none (`none` whose start has passed, or a cron
 * expression that can never match).
 */
export function nextRun(schedule: RecurrenceSpec, after: Date): Date | null;
/** Positional form (docs/ARCHITECTURE.md); without startAt, `after` anchors the wall-clock time. */
export function nextRun(recurrence: string, after: Date, startAt?: Date | string, timeZone?: string): Date | null;
export function nextRun(
  scheduleOrRecurrence: RecurrenceSpec | string,
  after: Date,
  startAt?: Date | string,
  timeZone?: string,
): Date | null {
  const schedule: RecurrenceSpec =
    typeof scheduleOrRecurrence === "string"
      ? { recurrence: scheduleOrRecurrence, startAt: startAt ?? after, timeZone }
      : scheduleOrRecurrence;
  const zone = schedule.timeZone ?? localTimeZone();
  if (!isValidTimeZone(zone)) throw new PuError("CONFIG_ERROR", `unknown time zone "${zone}"`);
  const start = resolveStart(schedule.startAt, zone);
  const recurrence = schedule.recurrence.trim();

  if (!isNamedRecurrence(recurrence)) return nextCronRun(recurrence, start.instant, after, zone);

  switch (recurrence) {
    case "none":
      return after.getTime() < start.instant.getTime() ? start.instant : null;
    case "hourly": {
      const elapsed = after.getTime() - start.instant.getTime();
      const hours = elapsed < 0 ? 0 : Math.floor(elapsed / HOUR_MS) + 1;
      return new Date(start.instant.getTime() + hours * HOUR_MS);
    }
    default:
      return nextCalendarRun(recurrence, start, after, zone);
  }
}

/**
 * Runs that fell due in (lastCheck, now], oldest first, at most `limit` —
 * for reporting what was missed while the daemon was down.
 */
export function missedRuns(schedule: RecurrenceSpec, lastCheck: Date, now: Date, limit = 100): Date[] {
  const runs: Date[] = [];
  let cursor = lastCheck;
  while (runs.length < limit) {
    const run = nextRun(schedule, cursor);
    if (!run || run.getTime() > now.getTime()) break;
    runs.push(run);
    cursor = run;
  }
  return runs;
}

// ---- calendar recurrences -------------------------------------------------

interface WallTime {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

interface ResolvedStart {
  instant: Date;
  /** The wall-clock time every occurrence keeps. */
  wall: WallTime;
}

type CalendarRecurrence = "daily" | "weekdays" | "weekly" | "monthly";

/** The cron expression (with seconds) a named recurrence stands for, from startAt's wall time. */
function calendarCron(recurrence: CalendarRecurrence, wall: WallTime): string {
  const time = `${wall.second} ${wall.minute} ${wall.hour}`;
  switch (recurrence) {
    case "daily":
      return `${time} * * *`;
    case "weekdays":
      return `${time} * * 1-5`;
    case "weekly":
      return `${time} * * ${new Date(Date.UTC(wall.year, wall.month - 1, wall.day)).getUTCDay()}`;
    case "monthly":
      // A day some months lack also matches every month's last day (L); nextCalendarRun
      // keeps only the one that is the clamped day of its month.
      return wall.day > 28 ? `${time} ${wall.day},L * *` : `${time} ${wall.day} * *`;
  }
}

function nextCalendarRun(recurrence: CalendarRecurrence, start: ResolvedStart, after: Date, zone: string): Date {
  const from = Math.max(after.getTime(), start.instant.getTime() - 1);
  // cron has whole seconds: match on them and add startAt's milliseconds back.
  const ms = start.wall.millisecond;
  const cron = parseCron(calendarCron(recurrence, start.wall), new Date(from - ms), zone);
  for (;;) {
    const candidate = new Date(cron.next().getTime() + ms);
    if (recurrence !== "monthly" || start.wall.day <= 28) return candidate;
    const wall = wallTimeAt(candidate, zone);
    if (wall.day === Math.min(start.wall.day, daysInMonth(wall.year, wall.month))) return candidate;
  }
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

// ---- cron -----------------------------------------------------------------

function parseCron(expression: string, currentDate: Date, zone: string) {
  try {
    return CronExpressionParser.parse(expression, { currentDate, tz: zone });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new PuError(
      "CONFIG_ERROR",
      `recurrence "${expression}" is neither ${NAMED_RECURRENCES.join(", ")} nor a valid cron expression: ${reason}`,
      { cause: error },
    );
  }
}

function nextCronRun(expression: string, startAt: Date, after: Date, zone: string): Date | null {
  // cron-parser's next() is strictly after currentDate; 1 ms before startAt lets startAt itself match.
  const from = Math.max(after.getTime(), startAt.getTime() - 1);
  const cron = parseCron(expression, new Date(from), zone);
  try {
    return cron.next().toDate();
  } catch {
    return null; // an expression that never matches (e.g. 30 February)
  }
}

// ---- time zones -------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

function wallTimeAt(instant: Date, zone: string): WallTime {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(zone).formatToParts(instant)) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 0,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
    millisecond: instant.getUTCMilliseconds(),
  };
}

/**
 * The instant a wall-clock time names in a zone (the rules at the top of this file), as the
 * first match of a cron expression for that one date, searched from a day before it.
 */
function instantOf(wall: WallTime, zone: string): Date {
  const dayBefore = Date.UTC(wall.year, wall.month - 1, wall.day - 1, wall.hour, wall.minute, wall.second);
  const cron = parseCron(`${wall.second} ${wall.minute} ${wall.hour} ${wall.day} ${wall.month} *`, new Date(dayBefore), zone);
  return new Date(cron.next().getTime() + wall.millisecond);
}

const LOCAL_ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?$/;
const OFFSET_ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

/** A wall-clock ISO date-time without offset, or undefined when `text` is not one (or names no real date). */
function parseLocalIso(text: string): WallTime | undefined {
  const match = LOCAL_ISO.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, ms] = match;
  const wall: WallTime = {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour: Number(h ?? 0),
    minute: Number(mi ?? 0),
    second: Number(s ?? 0),
    millisecond: Number((ms ?? "0").padEnd(3, "0")),
  };
  const lastDay = daysInMonth(wall.year, wall.month);
  const valid = wall.month >= 1 && wall.month <= 12 && wall.day >= 1 && wall.day <= lastDay &&
    wall.hour < 24 && wall.minute < 60 && wall.second < 60;
  return valid ? wall : undefined;
}

function resolveStart(startAt: string | Date, zone: string): ResolvedStart {
  if (startAt instanceof Date) {
    if (Number.isNaN(startAt.getTime())) throw new PuError("CONFIG_ERROR", "startAt is not a valid date");
    return { instant: startAt, wall: wallTimeAt(startAt, zone) };
  }
  const text = startAt.trim();
  const wall = parseLocalIso(text);
  if (wall) return { instant: instantOf(wall, zone), wall };
  const instant = new Date(text);
  if (!OFFSET_ISO.test(text) || Number.isNaN(instant.getTime())) {
    throw new PuError("CONFIG_ERROR", `startAt "${startAt}" is not an ISO 8601 date-time`);
  }
  return { instant, wall: wallTimeAt(instant, zone) };
}

/** True when `value` is an ISO 8601 date-time a schedule can start from (with or without offset). */
export function isScheduleTimestamp(value: string): boolean {
  const text = value.trim();
  return parseLocalIso(text) !== undefined || (OFFSET_ISO.test(text) && !Number.isNaN(new Date(text).getTime()));
}
