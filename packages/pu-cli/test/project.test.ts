import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isPuError } from "@pu/core/errors";
import { resolveProjectRoot } from "@pu/core/paths";
import { resolveInitRoot } from "../src/project.js";

let base: string;
const initialized = (dir: string) => {
  mkdirSync(path.join(dir, ".pu"), { recursive: true });
  writeFileSync(path.join(dir, ".pu", "manifest.json"), "{}");
  return dir;
};

beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), "pu-cli-project-")));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

function notInitialized(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (isPuError(error) && error.code === "NOT_INITIALIZED") return error.message;
    throw error;
  }
  throw new Error("expected NOT_INITIALIZED");
}

describe("resolveProjectRoot", () => {
  it("prefers --project over PU_PROJECT_ROOT over the cwd's ancestors", () => {
    const fromFlag = initialized(path.join(base, "flag"));
    const fromEnv = initialized(path.join(base, "env"));
    const fromCwd = initialized(path.join(base, "cwd"));
    const cwd = path.join(fromCwd, "src", "deep");
    mkdirSync(cwd, { recursive: true });
    const env = { PU_PROJECT_ROOT: fromEnv };
    expect(resolveProjectRoot({ flag: fromFlag, env, cwd })).toBe(fromFlag);
    expect(resolveProjectRoot({ env, cwd })).toBe(fromEnv);
    expect(resolveProjectRoot({ env: {}, cwd })).toBe(fromCwd);
    expect(resolveProjectRoot({ env: { PU_PROJECT_ROOT: "" }, cwd })).toBe(fromCwd);
  });

  it("resolves a relative --project against the cwd", () => {
    const project = initialized(path.join(base, "app"));
    expect(resolveProjectRoot({ flag: "../app", env: {}, cwd: path.join(base, "elsewhere") })).toBe(project);
  });

  it("finds the nearest initialized ancestor, not an outer one", () => {
    const outer = initialized(path.join(base, "outer"));
    const inner = initialized(path.join(outer, "inner"));
    expect(resolveProjectRoot({ env: {}, cwd: path.join(inner) })).toBe(inner);
  });

  it("does not treat a bare .pu directory (like PU_HOME at ~/.pu) as a project", () => {
    mkdirSync(path.join(base, ".pu"));
    const message = notInitialized(() => resolveProjectRoot({ env: {}, cwd: base }));
    expect(message).toContain(`no pu project at or above ${base}`);
    expect(message).toContain("pu init");
  });

  it("refuses an explicit root that was never initialized, naming it", () => {
    const message = notInitialized(() => resolveProjectRoot({ flag: path.join(base, "nope"), env: {}, cwd: base }));
    expect(message).toContain(path.join(base, "nope"));
  });
});

describe("resolveInitRoot", () => {
  it("uses the git top level of the cwd", async () => {
    const repo = path.join(base, "repo");
    mkdirSync(path.join(repo, "a", "b"), { recursive: true });
    execFileSync("git", ["init", "-q", repo]);
    expect(await resolveInitRoot({ cwd: path.join(repo, "a", "b") })).toBe(repo);
  });

  it("explains that init needs a git repository", async () => {
    const plain = path.join(base, "plain");
    mkdirSync(plain);
    await expect(resolveInitRoot({ cwd: plain })).rejects.toThrow(/pu init needs a git repository/);
  });
});
