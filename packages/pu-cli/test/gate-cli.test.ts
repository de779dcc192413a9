// `pu gate pre-commit|pre-push`: what the git hooks in pu's worktrees run. The daemon
// here was started by the CLI, so its hooks call this very bin (PU_CLI_BIN).
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git, startCliProject, type CliProject } from "./cli-project.js";

let p: CliProject;
let worktree: string;

const NO_FORBIDDEN = `on: pre_commit
sequence:
  - gate:
      run: "if [ -e forbidden.txt ]; then echo 'forbidden.txt must not be committed'; exit 1; fi"
`;

/** `git commit` of one new file; the hook's stderr when it was refused. */
function commit(cwd: string, file: string): { ok: true } | { ok: false; stderr: string } {
  writeFileSync(path.join(cwd, file), `${file}\n`);
  git(cwd, "add", "--", file);
  try {
    git(cwd, "commit", "-q", "-m", `add ${file}`);
    return { ok: true };
  } catch (err) {
    return { ok: false, stderr: String((err as { stderr?: unknown }).stderr ?? err) };
  }
}

beforeAll(async () => {
  p = await startCliProject("pu-cli-gate-");
  expect((await p.run(["trigger", "create", "no-forbidden", "-"], { input: NO_FORBIDDEN })).code).toBe(0);
  const spawned = await p.pu("spawn", "--agent", "terminal", "--name", "gated", "--json");
  expect(spawned.code).toBe(0);
  worktree = (JSON.parse(spawned.stdout) as { worktreePath: string }).worktreePath;
  expect(worktree).toContain(path.join(".pu", "worktrees"));
}, 60_000);
afterAll(async () => {
  await p?.stop();
}, 60_000);

describe("pu gate", () => {
  it("passes (exit 0, silent) when every gate passes", async () => {
    const r = await p.run(["gate", "pre-commit"], { cwd: worktree });
    expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("fails (exit 1) with the failing gate's command, exit code and output on stderr", async () => {
    writeFileSync(path.join(worktree, "forbidden.txt"), "x\n");
    try {
      const r = await p.run(["gate", "pre-commit"], { cwd: worktree });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines[0]).toMatch(/^pu: pre-commit gate `if \[ -e forbidden\.txt \].*` \(trigger no-forbidden\) exited 1 \(expected 0\) after \d+\.\ds$/);
      expect(lines[1]).toBe("forbidden.txt must not be committed");
      expect(lines[2]).toBe("pu: commit blocked by 1 failing pre-commit gate");

      const json = await p.run(["gate", "pre-commit", "--json"], { cwd: worktree });
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({ passed: false, runs: [{ triggerName: "no-forbidden", exitCode: 1 }] });

      // --cwd points the gates at another checkout: the main one has no forbidden.txt.
      expect((await p.run(["gate", "pre-commit", "--cwd", p.repo], { cwd: worktree })).code).toBe(0);
      expect((await p.run(["gate", "pre-commit", "--cwd", worktree], { cwd: p.repo })).code).toBe(1);
    } finally {
      rmSync(path.join(worktree, "forbidden.txt"));
    }
  });

  it("judges each gate by its expect_exit: a gate that wants exit 1 fails on exit 0, and only it is reported", async () => {
    const wantsFailure = `on: pre_commit
sequence:
  - gate: { run: "test -e must-be-absent.txt", expect_exit: 1 }
  - gate: { run: "true" }
`;
    expect((await p.run(["trigger", "create", "wants-failure", "-"], { input: wantsFailure })).code).toBe(0);
    try {
      expect((await p.run(["gate", "pre-commit"], { cwd: worktree })).code).toBe(0);
      writeFileSync(path.join(worktree, "must-be-absent.txt"), "x\n");
      const r = await p.run(["gate", "pre-commit"], { cwd: worktree });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/gate `test -e must-be-absent\.txt` \(trigger wants-failure\) exited 0 \(expected 1\)/);
      expect(r.stderr).not.toMatch(/gate `true`/);
      expect(r.stderr).toMatch(/blocked by 1 failing pre-commit gate$/m);
    } finally {
      rmSync(path.join(worktree, "must-be-absent.txt"), { force: true });
      expect((await p.run(["trigger", "delete", "wants-failure"])).code).toBe(0);
    }
  });

  it("pre-push runs only pre_push gates", async () => {
    writeFileSync(path.join(worktree, "forbidden.txt"), "x\n");
    try {
      expect(await p.run(["gate", "pre-push"], { cwd: worktree })).toEqual({ code: 0, stdout: "", stderr: "" });
    } finally {
      rmSync(path.join(worktree, "forbidden.txt"));
    }
  });

  it("finds the project from inside a worktree that carries a .pu/ of its own", async () => {
    // As if the checkout tracked a .pu/manifest.json: the nearest-manifest lookup would stop here.
    mkdirSync(path.join(worktree, ".pu"), { recursive: true });
    copyFileSync(path.join(p.repo, ".pu", "manifest.json"), path.join(worktree, ".pu", "manifest.json"));
    writeFileSync(path.join(worktree, "forbidden.txt"), "x\n");
    try {
      const r = await p.run(["gate", "pre-commit"], { cwd: worktree });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("(trigger no-forbidden) exited 1");
    } finally {
      rmSync(path.join(worktree, ".pu"), { recursive: true, force: true });
      rmSync(path.join(worktree, "forbidden.txt"));
    }
  });

  it("outside any project exits 3 before contacting a daemon", async () => {
    const r = await p.run(["gate", "pre-commit"], { cwd: p.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^pu: no pu project at or above /);
  });
});

describe("git commit through pu's hooks", () => {
  it("a failing pre_commit gate blocks a worktree commit; a passing one lets it through", () => {
    const before = git(worktree, "rev-list", "--count", "HEAD").trim();
    const blocked = commit(worktree, "forbidden.txt");
    expect(blocked.ok).toBe(false);
    expect(blocked.ok ? "" : blocked.stderr).toContain("forbidden.txt must not be committed");
    expect(blocked.ok ? "" : blocked.stderr).toContain("pu: commit blocked by 1 failing pre-commit gate");
    expect(git(worktree, "rev-list", "--count", "HEAD").trim()).toBe(before);

    git(worktree, "rm", "-q", "--cached", "forbidden.txt");
    rmSync(path.join(worktree, "forbidden.txt"));
    expect(commit(worktree, "fine.txt")).toEqual({ ok: true });
    expect(git(worktree, "rev-list", "--count", "HEAD").trim()).toBe(String(Number(before) + 1));
  });

  it("the main checkout's commits are not gated", () => {
    expect(commit(p.repo, "forbidden.txt")).toEqual({ ok: true });
    expect(existsSync(path.join(p.repo, "forbidden.txt"))).toBe(true);
  });
});
