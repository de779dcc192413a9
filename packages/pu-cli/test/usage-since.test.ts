import { describe, expect, it } from "vitest";
import { sinceDay } from "../src/usage-since.js";

describe("pu usage --since", () => {
  const now = new Date("2026-11-26T10:00:00Z");
  it("takes a day, today, or the last N days (today included)", () => {
    expect(sinceDay("2026-11-01", now)).toBe("2026-11-01");
    expect(sinceDay("today", now)).toBe("2026-11-26");
    expect(sinceDay("7d", now)).toBe("2026-11-20");
    expect(sinceDay(undefined, now)).toBeUndefined();
  });
  it("refuses anything else with the forms it takes", () => {
    expect(() => sinceDay("last week", now)).toThrow(/--since expects a day \(2026-11-01\), "today" or a number of days \(7d\)/);
    expect(() => sinceDay("2026-13-45", now)).toThrow(/--since/);
  });
});
