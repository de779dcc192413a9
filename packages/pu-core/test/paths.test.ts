import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import {
  configPath,
  definitionsDir,
  ensurePuHome,
  findProjectRoot,
  manifestPath,
  puHome,
  resolveProjectRoot,
  socketPath,
  worktreesDir,
} from "../src/paths.js";

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "pu-paths-"));
});
afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function thrown(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

function initProject(root: string): void {
  mkdirSync(join(root, ".pu"), { recursive: true });
  writeFileSync(manifestPath(root), "{}");
}

describe("pu home", () => {
  it("comes from PU_HOME, else ~/.pu", () => {
    expect(puHome({ PU_HOME: join(tmp, "h") })).toBe(join(tmp, "h"));
    expect(puHome({})).toMatch(/\/\.pu$/);
    expect(socketPath("/h")).toBe("/h/daemon.sock");
  });

  it("is created with mode 0700", () => {
    const home = join(tmp, "nested", "home");
    ensurePuHome(home);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    ensurePuHome(home);
  });

  it.each([0o770, 0o777, 0o702])("refuses an existing home with mode %o", (mode) => {
    const home = join(tmp, "shared-home");
    mkdirSync(home);
    chmodSync(home, mode);
    const error = thrown(() => ensurePuHome(home));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toContain(home);
    expect(error.message).toContain("group- or world-writable");
  });

  it("accepts an existing 0755 home", () => {
    const home = join(tmp, "readable");
    mkdirSync(home);
    chmodSync(home, 0o755);
    expect(() => ensurePuHome(home)).not.toThrow();
  });

  it("refuses a file where the home should be", () => {
    const home = join(tmp, "file");
    writeFileSync(home, "");
    expect(thrown(() => ensurePuHome(home)).code).toMatch(/CONFIG_ERROR|IO_ERROR/);
  });
});

describe("project paths", () => {
  it("lays out .pu", () => {
    expect(manifestPath("/p")).toBe("/p/.pu/manifest.json");
    expect(configPath("/p")).toBe("/p/.pu/config.yaml");
    expect(worktreesDir("/p")).toBe("/p/.pu/worktrees");
    expect(definitionsDir({ projectRoot: "/p" }, "template")).toBe("/p/.pu/templates");
    expect(definitionsDir({ home: "/h" }, "schedule")).toBe("/h/schedules");
    expect(definitionsDir("/h", "agent")).toBe("/h/agents");
  });

  it("finds the nearest initialized ancestor", () => {
    const outer = join(tmp, "outer");
    const inner = join(outer, "a", "inner");
    const deep = join(inner, "src", "lib");
    mkdirSync(deep, { recursive: true });
    initProject(outer);
    initProject(inner);
    expect(findProjectRoot(deep)).toBe(inner);
    expect(findProjectRoot(join(outer, "a"))).toBe(outer);
    expect(findProjectRoot(tmp)).toBeUndefined();
  });

  it("resolves the root from the flag, then PU_PROJECT_ROOT, then the cwd", () => {
    const project = join(tmp, "proj");
    const sub = join(project, "sub");
    mkdirSync(sub, { recursive: true });
    initProject(project);
    initProject(join(project, "flagged"));
    initProject(join(tmp, "from-env"));
    const env = { PU_PROJECT_ROOT: join(tmp, "from-env") };
    expect(resolveProjectRoot({ flag: "../flagged", env, cwd: sub })).toBe(join(project, "flagged"));
    expect(resolveProjectRoot({ env, cwd: sub })).toBe(join(tmp, "from-env"));
    expect(resolveProjectRoot({ env: {}, cwd: sub })).toBe(project);
  });

  it("refuses an explicit root that was never initialized, naming it", () => {
    const error = thrown(() => resolveProjectRoot({ flag: "typo", env: {}, cwd: tmp }));
    expect(error.code).toBe("NOT_INITIALIZED");
    expect(error.message).toBe(`no pu project at ${join(tmp, "typo")}; run \`pu init\` there first`);
  });

  it("says to run pu init when there is no project", () => {
    const error = thrown(() => resolveProjectRoot({ env: {}, cwd: tmp }));
    expect(error.code).toBe("NOT_INITIALIZED");
    expect(error.message).toBe(`no pu project at or above ${tmp}; run \`pu init\` first`);
  });
});
