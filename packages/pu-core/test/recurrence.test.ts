import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { missedRuns, nextRun, validateRecurrence, type RecurrenceSpec } from "../src/recurrence.js";

const NY = "America/New_York";
const iso = (d: Date | null) => d?.toISOString() ?? null;

/** Follows a schedule `count` times from `after`. */
function runs(schedule: RecurrenceSpec, after: string, count: number): string[] {
  const out: string[] = [];
  let cursor = new Date(after);
  for (let i = 0; i < count; i++) {
    const next = nextRun(schedule, cursor);
    if (!next) break;
    out.push(next.toISOString());
    cursor = next;
  }
  return out;
}

describe("nextRun: none", () => {
  const schedule = { recurrence: "none", startAt: "2025-06-01T10:00:00Z", timeZone: "UTC" };
  it("fires once at startAt while it is still ahead", () => {
    expect(iso(nextRun(schedule, new Date("2025-05-01T00:00:00Z")))).toBe("2025-06-01T10:00:00.000Z");
  });
  it("never fires again once startAt has passed (or is the reference point)", () => {
    expect(nextRun(schedule, new Date("2025-06-01T10:00:00Z"))).toBeNull();
    expect(nextRun(schedule, new Date("2025-07-01T00:00:00Z"))).toBeNull();
  });
});

describe("nextRun: hourly", () => {
  const schedule = { recurrence: "hourly", startAt: "2025-06-01T10:15:00Z", timeZone: "UTC" };
  it("keeps startAt's minute and is strictly after the reference time", () => {
    expect(iso(nextRun(schedule, new Date("2025-06-02T13:15:00Z")))).toBe("2025-06-02T14:15:00.000Z");
    expect(iso(nextRun(schedule, new Date("2025-06-02T13:16:00Z")))).toBe("2025-06-02T14:15:00.000Z");
    expect(iso(nextRun(schedule, new Date("2025-06-02T13:14:59Z")))).toBe("2025-06-02T13:15:00.000Z");
  });
  it("fires every hour through a fall-back night, never twice in the same minute", () => {
    const fallBack = { recurrence: "hourly", startAt: "2025-11-01T00:30:00", timeZone: NY };
    expect(runs(fallBack, "2025-11-02T04:00:00Z", 4)).toEqual([
      "2025-11-02T04:30:00.000Z", // 00:30 EDT
      "2025-11-02T05:30:00.000Z", // 01:30 EDT
      "2025-11-02T06:30:00.000Z", // 01:30 EST
      "2025-11-02T07:30:00.000Z", // 02:30 EST
    ]);
  });
});

describe("nextRun: startAt in the future", () => {
  it("does not fire before startAt, and fires at startAt itself", () => {
    const schedule = { recurrence: "daily", startAt: "2030-01-10T08:00:00Z", timeZone: "UTC" };
    expect(iso(nextRun(schedule, new Date("2025-01-01T00:00:00Z")))).toBe("2030-01-10T08:00:00.000Z");
  });
  it("applies to cron too", () => {
    const schedule = { recurrence: "0 * * * *", startAt: "2030-01-10T08:30:00Z", timeZone: "UTC" };
    expect(iso(nextRun(schedule, new Date("2025-01-01T00:00:00Z")))).toBe("2030-01-10T09:00:00.000Z");
  });
});

describe("nextRun: daily across DST in America/New_York", () => {
  it("keeps 09:00 wall time when the offset changes (spring forward)", () => {
    const schedule = { recurrence: "daily", startAt: "2025-03-01T09:00:00", timeZone: NY };
    expect(runs(schedule, "2025-03-08T15:00:00Z", 3)).toEqual([
      "2025-03-09T13:00:00.000Z", // 09:00 EDT (UTC-4), the day of the change
      "2025-03-10T13:00:00.000Z",
      "2025-03-11T13:00:00.000Z",
    ]);
    expect(iso(nextRun(schedule, new Date("2025-03-07T15:00:00Z")))).toBe("2025-03-08T14:00:00.000Z"); // 09:00 EST
  });
  it("keeps the wall time when startAt is given as a UTC instant", () => {
    const schedule = { recurrence: "daily", startAt: "2025-10-30T13:00:00Z", timeZone: NY }; // 09:00 EDT
    expect(runs(schedule, "2025-11-01T14:00:00Z", 2)).toEqual([
      "2025-11-02T14:00:00.000Z", // 09:00 EST
      "2025-11-03T14:00:00.000Z",
    ]);
  });
  it("moves a time in the spring-forward gap forward by the gap, and fires a repeated time once", () => {
    const gap = { recurrence: "daily", startAt: "2025-03-01T02:30:00", timeZone: NY };
    expect(runs(gap, "2025-03-08T12:00:00Z", 2)).toEqual([
      "2025-03-09T07:30:00.000Z", // 03:30 EDT: 02:30 does not exist that night
      "2025-03-10T06:30:00.000Z", // 02:30 EDT
    ]);
    const repeated = { recurrence: "daily", startAt: "2025-10-01T01:30:00", timeZone: NY };
    expect(runs(repeated, "2025-11-01T12:00:00Z", 2)).toEqual([
      "2025-11-02T05:30:00.000Z", // the first 01:30 (EDT) only
      "2025-11-03T06:30:00.000Z", // 01:30 EST
    ]);
  });
});

describe("nextRun: weekly, monthly and a one-off across DST", () => {
  it("weekly keeps Monday 09:00 in Europe/Berlin across its spring-forward night (29 March 2026)", () => {
    const schedule = { recurrence: "weekly", startAt: "2026-03-23T09:00:00", timeZone: "Europe/Berlin" };
    expect(runs(schedule, "2026-03-22T00:00:00Z", 3)).toEqual([
      "2026-03-23T08:00:00.000Z", // 09:00 CET (UTC+1)
      "2026-03-30T07:00:00.000Z", // 09:00 CEST (UTC+2)
      "2026-04-06T07:00:00.000Z",
    ]);
  });
  it("monthly on the 8th at 02:30 in New York: the gap night moves it to 03:30, the next month is back at 02:30", () => {
    const schedule = { recurrence: "monthly", startAt: "2026-02-08T02:30:00", timeZone: NY };
    expect(runs(schedule, "2026-02-09T00:00:00Z", 2)).toEqual([
      "2026-03-08T07:30:00.000Z", // 03:30 EDT: 02:30 does not exist on 8 March 2026
      "2026-04-08T06:30:00.000Z", // 02:30 EDT
    ]);
  });
  it("a one-off startAt inside the fall-back hour fires once, at the first 01:30", () => {
    const schedule = { recurrence: "none", startAt: "2026-11-01T01:30:00", timeZone: NY };
    expect(runs(schedule, "2026-10-31T00:00:00Z", 2)).toEqual(["2026-11-01T05:30:00.000Z"]); // 01:30 EDT
  });
  it("keeps startAt's milliseconds", () => {
    const schedule = { recurrence: "daily", startAt: "2026-03-07T09:00:00.250", timeZone: NY };
    expect(runs(schedule, "2026-03-07T00:00:00Z", 2)).toEqual(["2026-03-07T14:00:00.250Z", "2026-03-08T13:00:00.250Z"]);
  });
});

describe("nextRun: weekdays", () => {
  // 2025-06-06 is a Friday.
  const schedule = { recurrence: "weekdays", startAt: "2025-06-02T09:00:00", timeZone: "Europe/Berlin" };
  it("skips the weekend: Friday → Monday", () => {
    expect(runs(schedule, "2025-06-06T07:30:00Z", 3)).toEqual([
      "2025-06-09T07:00:00.000Z", // Monday 09:00 CEST, not Friday 09:00 (already passed)
      "2025-06-10T07:00:00.000Z",
      "2025-06-11T07:00:00.000Z",
    ]);
    expect(iso(nextRun(schedule, new Date("2025-06-07T12:00:00Z")))).toBe("2025-06-09T07:00:00.000Z"); // from Saturday
  });
  it("a startAt on a Saturday first fires on Monday", () => {
    const saturday = { recurrence: "weekdays", startAt: "2025-06-07T09:00:00", timeZone: "Europe/Berlin" };
    expect(iso(nextRun(saturday, new Date("2025-06-01T00:00:00Z")))).toBe("2025-06-09T07:00:00.000Z");
  });
});

describe("nextRun: weekly", () => {
  it("keeps startAt's weekday and time", () => {
    const schedule = { recurrence: "weekly", startAt: "2025-06-04T18:00:00Z", timeZone: "UTC" }; // Wednesday
    expect(runs(schedule, "2025-06-05T00:00:00Z", 2)).toEqual(["2025-06-11T18:00:00.000Z", "2025-06-18T18:00:00.000Z"]);
  });
});

describe("nextRun: monthly", () => {
  it("on the 31st clamps to short months and returns to the 31st", () => {
    const schedule = { recurrence: "monthly", startAt: "2025-01-31T12:00:00Z", timeZone: "UTC" };
    expect(runs(schedule, "2025-01-31T12:00:00Z", 4)).toEqual([
      "2025-02-28T12:00:00.000Z",
      "2025-03-31T12:00:00.000Z",
      "2025-04-30T12:00:00.000Z",
      "2025-05-31T12:00:00.000Z",
    ]);
  });
  it("uses Feb 29 in a leap year", () => {
    const schedule = { recurrence: "monthly", startAt: "2023-12-31T06:00:00", timeZone: "UTC" };
    expect(runs(schedule, "2024-01-31T07:00:00Z", 2)).toEqual(["2024-02-29T06:00:00.000Z", "2024-03-31T06:00:00.000Z"]);
  });
  it("jumps far ahead without walking every month, keeping wall time in the zone", () => {
    const schedule = { recurrence: "monthly", startAt: "2020-01-15T09:00:00", timeZone: NY };
    expect(iso(nextRun(schedule, new Date("2025-07-01T00:00:00Z")))).toBe("2025-07-15T13:00:00.000Z"); // EDT
    expect(iso(nextRun(schedule, new Date("2025-12-01T00:00:00Z")))).toBe("2025-12-15T14:00:00.000Z"); // EST
  });
});

describe("nextRun: cron expressions", () => {
  it("evaluates in the schedule's zone: `0 2 * * *` on the spring-forward day fires once, at 03:00 EDT", () => {
    const schedule = { recurrence: "0 2 * * *", startAt: "2025-01-01T00:00:00Z", timeZone: NY };
    expect(runs(schedule, "2025-03-08T12:00:00Z", 3)).toEqual([
      "2025-03-09T07:00:00.000Z", // 02:00 does not exist; next valid instant is 03:00 EDT
      "2025-03-10T06:00:00.000Z", // 02:00 EDT
      "2025-03-11T06:00:00.000Z",
    ]);
  });
  it("is strictly after the reference time", () => {
    const schedule = { recurrence: "*/15 * * * *", startAt: "2025-01-01T00:00:00Z", timeZone: "UTC" };
    expect(iso(nextRun(schedule, new Date("2025-06-01T10:15:00Z")))).toBe("2025-06-01T10:30:00.000Z");
  });
  it("rejects an invalid expression with CONFIG_ERROR naming it", () => {
    const schedule = { recurrence: "61 * * * *", startAt: "2025-01-01T00:00:00Z", timeZone: "UTC" };
    let caught: unknown;
    try {
      nextRun(schedule, new Date());
    } catch (error) {
      caught = error;
    }
    expect(isPuError(caught) && caught.code).toBe("CONFIG_ERROR");
    expect((caught as Error).message).toContain('"61 * * * *"');
    expect(() => validateRecurrence("every tuesday")).toThrow(/"every tuesday"/);
    expect(() => validateRecurrence("weekdays")).not.toThrow();
  });
  it("rejects a day that no month has", () => {
    expect(() => validateRecurrence("0 0 30 2 *")).toThrow(/"0 0 30 2 \*"/);
  });
});

describe("nextRun: positional form", () => {
  it("takes recurrence, after, startAt and zone as arguments", () => {
    const after = new Date("2025-06-01T12:00:00Z");
    expect(iso(nextRun("daily", after, new Date("2025-01-01T08:00:00Z"), "UTC"))).toBe("2025-06-02T08:00:00.000Z");
    expect(iso(nextRun("0 9 * * *", after, undefined, "Europe/Berlin"))).toBe("2025-06-02T07:00:00.000Z");
  });
});

describe("missedRuns", () => {
  it("lists the runs that fell due while nothing was checking, oldest first, capped", () => {
    const schedule = { recurrence: "daily", startAt: "2025-01-01T09:00:00Z", timeZone: "UTC" };
    const missed = missedRuns(schedule, new Date("2025-03-01T10:00:00Z"), new Date("2025-03-04T09:00:00Z"));
    expect(missed.map(iso)).toEqual([
      "2025-03-02T09:00:00.000Z",
      "2025-03-03T09:00:00.000Z",
      "2025-03-04T09:00:00.000Z",
    ]);
    const capped = missedRuns(schedule, new Date("2025-01-01T00:00:00Z"), new Date("2026-01-01T00:00:00Z"), 5);
    expect(capped).toHaveLength(5);
    expect(missedRuns(schedule, new Date("2025-03-04T09:00:00Z"), new Date("2025-03-04T10:00:00Z"))).toEqual([]);
  });
});
