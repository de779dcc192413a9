import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MAX_TIMER_MS, setLongTimeout } from "../src/long-timeout.js";

const MINUTE = 60_000;

describe("setLongTimeout", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fires after a short delay, once", () => {
    const fired = vi.fn();
    setLongTimeout(fired, 5 * MINUTE);
    vi.advanceTimersByTime(5 * MINUTE - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(10 * MINUTE);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("waits out a delay setTimeout cannot take (40,000 minutes) instead of firing at once", () => {
    const fired = vi.fn();
    const ms = 40_000 * MINUTE;
    expect(ms).toBeGreaterThan(MAX_TIMER_MS);
    setLongTimeout(fired, ms);
    vi.advanceTimersByTime(MINUTE);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(ms - MAX_TIMER_MS - MINUTE - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("cancels, before the first piece and between pieces", () => {
    const early = vi.fn();
    setLongTimeout(early, MINUTE)();
    const late = vi.fn();
    const cancelLate = setLongTimeout(late, 3 * MAX_TIMER_MS);
    vi.advanceTimersByTime(MAX_TIMER_MS + MINUTE);
    cancelLate();
    vi.advanceTimersByTime(5 * MAX_TIMER_MS);
    expect(early).not.toHaveBeenCalled();
    expect(late).not.toHaveBeenCalled();
  });
});
