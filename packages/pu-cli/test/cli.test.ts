import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPu } from "./run-pu.js";

let home: string;
let cwd: string;
const pu = (...args: string[]) => runPu(args, { cwd, env: { PU_HOME: home } });

beforeAll(() => {
  home = mkdtempSync(path.join(tmpdir(), "pu-cli-home-"));
  cwd = mkdtempSync(path.join(tmpdir(), "pu-cli-cwd-"));
});
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(cwd, { recursive: true, force: true });
});

/** No command in this file may start a daemon: PU_HOME stays empty. */
function expectNoDaemonStarted() {
  expect(readdirSync(home)).toEqual([]);
}

function expectOneErrorLine(stderr: string, pattern: RegExp) {
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^pu: /);
  expect(lines[0]).toMatch(pattern);
}

describe("pu --version / --help", () => {
  it("prints the version from @pu/cli's package.json, for --version and -v", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    for (const flag of ["--version", "-v"]) {
      const r = await pu(flag);
      expect(r).toMatchObject({ code: 0, stdout: `pu ${version}\n` });
    }
  });

  it("lists every command in the top-level help", async () => {
    const r = await pu("--help");
    expect(r.code).toBe(0);
    for (const p of ["init", "spawn", "status", "kill", "bench", "play", "attach", "logs", "send", "diff", "merge", "clean", "health", "daemon start", "daemon stop", "daemon restart", "daemon status"]) {
      expect(r.stdout).toContain(`pu ${p} `);
    }
  });

  it("shows help when run with no arguments", async () => {
    const r = await pu();
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("pu spawn");
  });

  it("lists a group's commands", async () => {
    const r = await pu("daemon", "--help");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("pu daemon restart");
    expect(r.stdout).not.toContain("pu spawn");
  });

  it("shows a command's help with examples", async () => {
    const r = await pu("spawn", "--help");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("--no-trigger");
    expect(r.stdout).toContain("Examples");
    expect(r.stdout).toContain("pu spawn --agent terminal --root");
    const send = await pu("send", "-h");
    expect(send.stdout).toContain('pu send ag-ab12cd34 --keys "C-c"');
    expectNoDaemonStarted();
  });
});

describe("usage errors exit 2 with one line and a hint", () => {
  it.each([
    [["stauts"], /unknown command "stauts"; run `pu --help`/],
    [["status", "--bogus"], /--bogus.*run `pu status --help`/],
    [["play"], /run `pu play --help`/],
    [["spawn", "--root", "--worktree", "wt-abcdefgh"], /--root and --worktree cannot be used together/],
    [["spawn", "--trigger", "t", "--no-trigger"], /--trigger and --no-trigger cannot be used together/],
    [["spawn", "a prompt", "--file", "p.md"], /PROMPT and --file cannot be used together/],
    [["spawn", "--var", "A=1", "--no-trigger"], /--var needs --template or a trigger/],
    [["spawn", "--template", "t", "--var", "novalue"], /--var expects KEY=VALUE/],
    [["kill"], /--agent ID, --worktree WT or --all/],
    [["kill", "--agent", "ag-x", "--all"], /--agent and --all cannot be used together/],
    [["kill", "--worktree", "wt-x", "--include-root"], /--include-root only goes with --all/],
    [["bench"], /an agent ID or --all/],
    [["clean"], /--worktree WT or --all/],
    [["merge", "wt-x", "--squash", "--ff-only"], /--squash and --ff-only/],
    [["send", "ag-x"], /TEXT to type or --keys/],
    [["send", "ag-x", "--keys", "C-c Nope"], /unknown key name "Nope"; valid keys: .*Enter/],
    [["logs", "ag-x", "--tail", "lots"], /--tail expects a number of bytes/],
    [["attach", "ag-x", "--detach-key", "x"], /--detach-key must be a control key/],
    [["attach", "ag-x", "--detach-key", "C-["], /--detach-key C-\[ is Escape, which arrow and function keys send/],
    [["daemon"], /pu daemon needs a subcommand \(one of: start, stop, stdio, restart, status\)/],
    [["daemon", "frob"], /pu daemon has no subcommand "frob"/],
    // A required option left out is named, not "invalid arguments".
    [["review", "reject", "TASK-0001"], /^pu: pu review reject needs --reason; run `pu review reject --help`$/m],
    [["host", "add", "box", "--ssh", "me@box"], /^pu: pu host add needs --root; run `pu host add --help`$/m],
    [["host", "install", "box"], /^pu: pu host install needs --packed; run `pu host install --help`$/m],
  ])("pu %j", async (args, pattern) => {
    const r = await pu(...args);
    expect(r.code).toBe(2);
    expectOneErrorLine(r.stderr, pattern);
    expect(r.stdout).toBe("");
    expectNoDaemonStarted();
  });

  it("adds the error document on stdout with --json", async () => {
    const r = await pu("kill", "--json");
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({
      error: { code: "INVALID_ARGUMENT", message: "say what to kill: an agent or worktree ID, --agent ID, --worktree WT or --all" },
    });
  });

  it("reports clipanion's own parse errors as JSON too", async () => {
    const r = await pu("status", "--json", "--nope");
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.code).toBe("INVALID_ARGUMENT");
  });
});

describe("outside a project", () => {
  it("status exits 3 with the pu init hint before any daemon is started", async () => {
    const r = await pu("status");
    expect(r.code).toBe(3);
    expectOneErrorLine(r.stderr, /no pu project at or above .*; run `pu init`/);
    expectNoDaemonStarted();
  });

  it("--project pointing at an uninitialized directory exits 3 as JSON", async () => {
    const r = await pu("spawn", "hello", "--project", cwd, "--json");
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).error.code).toBe("NOT_INITIALIZED");
    expectNoDaemonStarted();
  });

  it("init outside a git repository explains what is needed", async () => {
    const r = await pu("init");
    expect(r.code).toBe(1);
    expectOneErrorLine(r.stderr, /pu init needs a git repository/);
    expectNoDaemonStarted();
  });

  it("spawn --file naming a missing file is not found (exit 3)", async () => {
    writeFileSync(path.join(cwd, "exists.md"), "x");
    const r = await pu("spawn", "--file", "missing.md");
    expect(r.code).toBe(3);
    expectOneErrorLine(r.stderr, /cannot read --file missing\.md: no such file/);
  });
});

describe("pu completion", () => {
  it("prints the script as it is, and as one JSON document with --json", async () => {
    const plain = await pu("completion", "bash");
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("complete -F");
    const json = await pu("completion", "bash", "--json");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ shell: "bash", script: plain.stdout });
    expectNoDaemonStarted();
  });
});

describe("daemon status without a daemon", () => {
  it("says not running and starts nothing", async () => {
    const r = await pu("daemon", "status", "--json");
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout)).toEqual({ running: false, home });
    expect(existsSync(path.join(home, "daemon.sock"))).toBe(false);
  });
});

describe("command table", () => {
  // Run under plain Node: vite would resolve clipanion to its (broken under Node) .mjs build.
  it("maps each path to the command that declares it", async () => {
    const script = `
      const t = await import(${JSON.stringify(new URL("../dist/command-table.js", import.meta.url).href)});
      const classes = await t.loadCommands(t.ALL_COMMAND_PATHS);
      console.log(JSON.stringify({ table: t.ALL_COMMAND_PATHS, declared: classes.map((c) => c.paths.map((p) => p.join(" "))) }));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    const { table, declared } = JSON.parse(out) as { table: string[]; declared: string[][] };
    expect(table.length).toBeGreaterThan(15);
    expect(declared).toEqual(table.map((p) => [p]));
  });
});
