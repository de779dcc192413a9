// The daemon answers every request type: its table is a HandlerTable, which the compiler
// checks for completeness (`pnpm typecheck` covers this file). A table that forgets one
// request type, or answers one that does not exist, must not compile.
import { describe, expect, it } from "vitest";
import type { RequestType } from "../src/protocol.js";
import type { Handler, HandlerTable } from "../src/server.js";

type AllBut<T extends RequestType> = Omit<HandlerTable, T>;

describe("HandlerTable", () => {
  it("needs a handler for every request type", () => {
    const withoutHealth = {} as AllBut<"health">;
    // @ts-expect-error `health` is missing: a daemon built from this table would not compile.
    const table: HandlerTable = withoutHealth;
    const health: Handler<"health"> = async () => ({}) as never;
    const complete: HandlerTable = { ...withoutHealth, health };
    expect(Object.keys(complete)).toContain("health");
    expect(table).toBe(withoutHealth);
  });
});
