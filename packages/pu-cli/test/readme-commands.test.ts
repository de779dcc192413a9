// The README's command table is generated from `pu --help`; this keeps them from drifting.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

describe("README command table", () => {
  it("lists exactly the commands `pu --help` shows", () => {
    const run = () =>
      execFileSync(process.execPath, [path.join(repo, "scripts/readme-commands.mjs"), "--check"], { encoding: "utf8", stdio: "pipe" });
    expect(run).not.toThrow();
  });
});
