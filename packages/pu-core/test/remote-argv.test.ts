// What crosses a transport to a host's shell comes out as the same argv: checked by handing
// the quoted line to a real /bin/sh and reading back each argument it received.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { remoteCommandLine } from "../src/remote-argv.js";

/** The argv /bin/sh hands to a program when it reads `line`. */
function argvThroughShell(line: string): string[] {
  const out = execFileSync("/bin/sh", ["-c", `printargs() { for a in "$@"; do printf '%s\\0' "$a"; done; }; printargs ${line.replace(/^\S+/, "")}`], { encoding: "utf8" });
  return out.split("\0").slice(0, -1);
}

describe("remoteCommandLine", () => {
  const markerDir = mkdtempSync(path.join(os.tmpdir(), "pu-argv-"));
  const marker = path.join(markerDir, "pwned");
  afterAll(() => rmSync(markerDir, { recursive: true, force: true }));
  const hostile = [
    "plain",
    "two words",
    "it's",
    `$(touch ${marker})`,
    `; touch ${marker}`,
    "`id`",
    "a;b|c&d",
    "new\nline",
    "*",
    "~root",
    "-rf",
    "",
    "'''",
    "\\'\"",
    "${HOME}",
    "pu/feature-🎉",
    "KEY=$(id)",
  ];

  it("a POSIX shell reads every hostile argument back unchanged, and runs none of it", () => {
    const line = remoteCommandLine(["prog", ...hostile]);
    expect(argvThroughShell(line)).toEqual(hostile);
    expect(existsSync(marker)).toBe(false);
  });

  it("leaves simple words bare and refuses what no shell word can hold", () => {
    expect(remoteCommandLine(["pu", "daemon", "stdio"])).toBe("pu daemon stdio");
    expect(remoteCommandLine(["env", "PU_HOME=/srv/pu/home"])).toBe("env PU_HOME=/srv/pu/home");
    expect(() => remoteCommandLine([])).toThrow(/at least a program/);
    expect(() => remoteCommandLine(["a\0b"])).toThrow(/NUL/);
  });
});
