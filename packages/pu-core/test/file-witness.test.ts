import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileWitness } from "../src/file-witness.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "pu-witness-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("FileWitness", () => {
  it("tells a file changed since it was noted (written, replaced, removed, created) from one left alone", async () => {
    const file = path.join(dir, "state.json");
    const witness = new FileWitness();
    expect(await witness.changed(file)).toBe(true); // nothing noted yet
    await witness.note(file);
    expect(await witness.changed(file)).toBe(false); // absent, still absent
    writeFileSync(file, "{}");
    expect(await witness.changed(file)).toBe(true);
    await witness.note(file);
    expect(await witness.changed(file)).toBe(false);
    // Same size, rewritten in place: the modification time moves.
    await new Promise((resolve) => setTimeout(resolve, 5));
    writeFileSync(file, "[]");
    expect(await witness.changed(file)).toBe(true);
    await witness.note(file);
    rmSync(file);
    expect(await witness.changed(file)).toBe(true);
  });

  it("names what spoiled a file changed since it was noted, and nothing for one unchanged, still parsing or gone", async () => {
    const file = path.join(dir, "usage.json");
    const parse = (text: string) => JSON.parse(text) as unknown;
    const witness = new FileWitness();
    writeFileSync(file, "{}");
    await witness.note(file);
    // Unchanged: not even read, so a parser that always throws is never asked.
    expect(await witness.spoiledSinceNoted(file, () => { throw new Error("read"); })).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 5));
    writeFileSync(file, '{"still": "json"}');
    expect(await witness.spoiledSinceNoted(file, parse)).toBeUndefined();
    writeFileSync(file, "{ half");
    expect(await witness.spoiledSinceNoted(file, parse)).toMatch(/JSON/);
    rmSync(file);
    expect(await witness.spoiledSinceNoted(file, parse)).toBeUndefined();
  });
});
