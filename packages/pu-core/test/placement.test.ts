import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { newHostRecord } from "../src/hosts-file.js";
import { choosePlace, parsePlaces } from "../src/placement.js";

const refused = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (isPuError(err) && err.code === "INVALID_ARGUMENT") return err.message;
    throw err;
  }
  throw new Error("not refused");
};

describe("parsePlaces", () => {
  it("keeps the order typed, trims, and refuses an empty list, a repeated place and a name no host can have", () => {
    expect(parsePlaces([" local", "gpu-box "], "--on")).toEqual(["local", "gpu-box"]);
    expect(refused(() => parsePlaces(["", " "], "--on"))).toMatch(/--on needs at least one place/);
    expect(refused(() => parsePlaces(["box", "box"], "--on"))).toMatch(/box is listed twice/);
    expect(refused(() => parsePlaces(["me@box"], "--on"))).toMatch(/"me@box" is not a host name/);
    expect(refused(() => parsePlaces(["-o"], "--on"))).toMatch(/not a host name/);
  });

  it("no host may be called local: the name is this machine's", () => {
    expect(refused(() => newHostRecord({ name: "local", transport: { kind: "exec", command: ["sh"] }, root: "/pu" }, new Date()))).toMatch(/"local" names this machine/);
  });
});

describe("choosePlace", () => {
  it("spreads one owner's launches: the place holding the fewest of them, the first listed on a tie", () => {
    const held = new Map<string, number>();
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const place = choosePlace(["local", "a", "b"], () => true, (p) => held.get(p) ?? 0)!;
      held.set(place, (held.get(place) ?? 0) + 1);
      order.push(place);
    }
    expect(order).toEqual(["local", "a", "b", "local", "a"]);
  });

  it("skips a place without room and answers undefined when none has any", () => {
    expect(choosePlace(["local", "a"], (p) => p !== "local", () => 0)).toBe("a");
    expect(choosePlace(["local", "a"], () => false, () => 0)).toBeUndefined();
  });
});
