// Work that must not overlap for one key takes turns: in order, one at a time per key, other
// keys alongside, a failure never holding up the next turn, and nothing kept once a key is idle.
import { describe, expect, it } from "vitest";
import { KeyedTurns } from "../src/keyed-turns.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("KeyedTurns", () => {
  it("runs one body at a time per key, in the order asked, while another key goes on", async () => {
    const turns = new KeyedTurns();
    const log: string[] = [];
    let running = 0;
    let most = 0;
    const body = (name: string) => async () => {
      running++;
      most = Math.max(most, running);
      log.push(`${name} start`);
      await tick();
      await tick();
      log.push(`${name} end`);
      running--;
      return name;
    };
    const other: string[] = [];
    const elsewhere = turns.run("b", async () => {
      other.push("b start");
      await tick();
      other.push(`b saw ${log.length} entries of a`);
    });
    const results = await Promise.all([turns.run("a", body("1")), turns.run("a", body("2")), turns.run("a", body("3")), elsewhere]);
    expect(results.slice(0, 3)).toEqual(["1", "2", "3"]);
    expect(log).toEqual(["1 start", "1 end", "2 start", "2 end", "3 start", "3 end"]);
    expect(most).toBe(1);
    // Key b ran alongside a's first turn, not after a's three.
    expect(other).toEqual(["b start", "b saw 1 entries of a"]);
  });

  it("a failed turn rejects for its caller only; the next turn runs, and an idle key is forgotten", async () => {
    const turns = new KeyedTurns();
    const failed = turns.run("a", async () => {
      throw new Error("refused");
    });
    const next = turns.run("a", async () => "ran");
    expect(turns.busyKeys).toBe(1);
    await expect(failed).rejects.toThrow("refused");
    await expect(next).resolves.toBe("ran");
    await tick();
    expect(turns.busyKeys).toBe(0);
  });
});
