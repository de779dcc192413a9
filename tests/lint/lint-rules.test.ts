// `pnpm lint`'s import rules (scripts/lint-imports.mjs with .dependency-cruiser.cjs)
// and its unused-code check (knip) on a copy of the workspace: the tree as it is
// passes, and each planted violation fails it by name.
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const REPO = join(import.meta.dirname, "..", "..");
const LINT_IMPORTS = join(REPO, "scripts", "lint-imports.mjs");

let tree: string;

beforeEach(() => {
  tree = mkdtempSync(join(tmpdir(), "pu-lint-rules-"));
  for (const pkg of readdirSync(join(REPO, "packages"))) {
    cpSync(join(REPO, "packages", pkg, "src"), join(tree, "packages", pkg, "src"), { recursive: true });
  }
  for (const file of [".dependency-cruiser.cjs", "tsconfig.base.json"]) {
    cpSync(join(REPO, file), join(tree, file));
  }
});

afterEach(() => rmSync(tree, { recursive: true, force: true }));

function lintImports(): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [LINT_IMPORTS], { cwd: tree, encoding: "utf8" });
  return { status: run.status, output: run.stdout + run.stderr };
}

function plant(path: string, text: string): void {
  writeFileSync(join(tree, path), text);
}

describe("import rules", () => {
  it("pass on the tree as it is, with no violation excused", () => {
    const { status, output } = lintImports();
    expect(output).toMatch(/no dependency violations found/);
    expect(output).not.toMatch(/known violations/);
    expect(status).toBe(0);
  });

  it("fail on a handler importing another handler", () => {
    plant("packages/pu-engine/src/handlers/planted.ts", 'export { handleHealth } from "./health.js";\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/handler-imports-handler: packages\/pu-engine\/src\/handlers\/planted\.ts/);
    expect(status).not.toBe(0);
  });

  it("fail on a service importing a handler", () => {
    plant("packages/pu-engine/src/planted.ts", 'export { handleHealth } from "./handlers/health.js";\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/service-imports-handler: packages\/pu-engine\/src\/planted\.ts/);
    expect(status).not.toBe(0);
  });

  it("fail on an engine floor importing a floor above it, naming the floor", () => {
    // The terminal layer reaching up into agents, and a git primitive reaching into worktrees.
    plant("packages/pu-engine/src/session/planted.ts", 'export { stopAgents } from "../agents/stop.js";\n');
    plant("packages/pu-engine/src/git/planted.ts", 'export * from "../worktrees/merge-recorded.js";\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/engine-floor-session: packages\/pu-engine\/src\/session\/planted\.ts → packages\/pu-engine\/src\/agents\/stop\.ts/);
    expect(output).toMatch(/engine-floor-git: packages\/pu-engine\/src\/git\/planted\.ts → packages\/pu-engine\/src\/worktrees\/merge-recorded\.ts/);
    expect(status).not.toBe(0);
  });

  it("fail on an engine file that sits on no floor", () => {
    mkdirSync(join(tree, "packages/pu-engine/src/elsewhere"));
    plant("packages/pu-engine/src/elsewhere/planted.ts", 'export { openDaemonLog } from "../daemon-log.js";\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/engine-file-without-floor: packages\/pu-engine\/src\/elsewhere\/planted\.ts/);
    expect(status).not.toBe(0);
  });

  it("fail on an import cycle", () => {
    plant("packages/pu-core/src/planted-a.ts", 'import { b } from "./planted-b.js";\nexport const a = () => b;\n');
    plant("packages/pu-core/src/planted-b.ts", 'import { a } from "./planted-a.js";\nexport const b = () => a;\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/no-cycle: packages\/pu-core\/src\/planted-a\.ts/);
    expect(status).not.toBe(0);
  });

  it("fail on pu-core importing pu-ipc and pu-cli importing pu-engine", () => {
    plant("packages/pu-core/src/planted.ts", 'export type { Client } from "@pu/ipc/client";\n');
    plant("packages/pu-cli/src/planted.ts", 'export { runDaemon } from "@pu/engine/daemon";\n');
    const { status, output } = lintImports();
    expect(output).toMatch(/pu-core-imports-pu: packages\/pu-core\/src\/planted\.ts/);
    expect(output).toMatch(/pu-cli-imports-engine: packages\/pu-cli\/src\/planted\.ts/);
    expect(status).not.toBe(0);
  });
});

describe("unused code (knip)", () => {
  function copyTrackedFiles(): void {
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: REPO, encoding: "utf8" }).split("\0").filter(Boolean);
    for (const file of files) {
      mkdirSync(dirname(join(tree, file)), { recursive: true });
      try {
        cpSync(join(REPO, file), join(tree, file));
      } catch {
        // tracked but deleted in the working tree
      }
    }
    symlinkSync(join(REPO, "node_modules"), join(tree, "node_modules"));
  }

  function knip(): { status: number | null; output: string } {
    const run = spawnSync(process.execPath, [join(REPO, "node_modules", "knip", "bin", "knip.js")], { cwd: tree, encoding: "utf8" });
    return { status: run.status, output: run.stdout + run.stderr };
  }

  it("passes on the tree as it is and fails on an export nothing imports", () => {
    rmSync(tree, { recursive: true, force: true });
    mkdirSync(tree);
    copyTrackedFiles();
    const clean = knip();
    expect(clean.output).toBe("");
    expect(clean.status).toBe(0);

    appendFileSync(join(tree, "packages/pu-engine/src/projects.ts"), "export const nobodyUsesThis = 1;\n");
    const dirty = knip();
    expect(dirty.output).toMatch(/nobodyUsesThis/);
    expect(dirty.status).not.toBe(0);
  });
});
