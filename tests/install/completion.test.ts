// `pu completion bash|zsh` in the real shells: the script is sourced, the completion function
// called the way the shell calls it on Tab, and what it offers is checked. Command names come
// from the CLI itself; agent and worktree ids from the sandbox's real daemon.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PU_BIN, PuSandbox } from "../helpers/pu-sandbox.js";

const execFileAsync = promisify(execFile);

let sandbox: PuSandbox;
/** A directory holding `pu` (a link to this workspace's bin), first on PATH for the shells. */
let binDir: string;
let rootAgent: string;
let worktreeAgent: string;
let worktreeId: string;

function shellEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return sandbox.env({ PATH: `${binDir}:${process.env.PATH ?? ""}`, ...extra });
}

/** What bash's completion offers for `words` (the last one is under the cursor). */
async function bashComplete(words: string[], { cwd = sandbox.root, env = {} }: { cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<string[]> {
  const script = [
    "source <(pu completion bash) || exit 9",
    'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))',
    "_pu_completion",
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join("\n");
  const { stdout } = await execFileAsync("bash", ["--norc", "--noprofile", "-c", script, "bash", "pu", ...words], { cwd, env: shellEnv(env), timeout: 30_000 });
  return stdout.split("\n").filter((line) => line !== "");
}

function which(program: string): string | undefined {
  try {
    return execFileSync("sh", ["-c", `command -v ${program}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  sandbox = new PuSandbox("pu-completion-");
  binDir = path.join(sandbox.base, "bin");
  mkdirSync(binDir);
  symlinkSync(PU_BIN, path.join(binDir, "pu"));
  await sandbox.ok(["init"]);
  rootAgent = (await sandbox.spawnAgent(["--root", "--command", "sh", "--name", "root-shell"])).agentId;
  const inWorktree = await sandbox.spawnAgent(["--command", "sh", "--name", "wt-shell"]);
  worktreeAgent = inWorktree.agentId;
  worktreeId = inWorktree.worktreeId!;
  sandbox.noteDaemonPid();
});

afterAll(async () => {
  const leftovers = await sandbox.teardown();
  expect(leftovers).toEqual([]);
});

describe("pu completion bash", () => {
  it("offers every command and group name `pu --help` lists, and nothing else", async () => {
    const help = await sandbox.ok(["--help"]);
    const names = new Set([...help.matchAll(/^ {2}pu ([a-z][a-z-]*)/gm)].map((m) => m[1]!));
    expect(names).toContain("completion");
    expect(names).toContain("trigger");
    expect(new Set(await bashComplete([""]))).toEqual(names);
    expect(await bashComplete(["tr"])).toEqual(["trust", "trigger"]);
  });

  it("completes a group's subcommands", async () => {
    expect(await bashComplete(["trigger", ""])).toEqual(["list", "show", "create", "delete", "assign", "log"]);
    expect(await bashComplete(["trigger", "l"])).toEqual(["list", "log"]);
    expect(await bashComplete(["daemon", "st"])).toEqual(["start", "stop", "stdio", "status"]);
  });

  it("completes each command's own options", async () => {
    expect(await bashComplete(["spawn", "--ro"])).toEqual(["--root"]);
    const attach = await bashComplete(["attach", "--"]);
    expect(attach).toEqual(expect.arrayContaining(["--detach-key", "--json", "--project", "--help"]));
    expect(attach).not.toContain("--root");
    expect(await bashComplete(["trigger", "list", "--j"])).toEqual(["--json"]);
  });

  it("completes agent ids from the running daemon where a command takes one", async () => {
    const both = [rootAgent, worktreeAgent].sort();
    expect((await bashComplete(["attach", ""])).sort()).toEqual(both);
    expect(await bashComplete(["send", rootAgent.slice(0, -1)])).toEqual([rootAgent]);
    expect((await bashComplete(["trigger", "assign", ""])).sort()).toEqual(both);
    // The second positional of `trigger assign` is a trigger name, not an agent.
    expect(await bashComplete(["trigger", "assign", rootAgent, ""])).toEqual([]);
    expect((await bashComplete(["status", "--agent", ""])).sort()).toEqual(both);
    expect((await bashComplete(["logs", "--json", ""])).sort()).toEqual(both);
    // `spawn --agent` wants an agent type, not an id.
    expect(await bashComplete(["spawn", "--agent", ""])).toEqual([]);
  });

  it("completes worktree ids for worktree arguments", async () => {
    expect(await bashComplete(["merge", ""])).toEqual([worktreeId]);
    expect(await bashComplete(["clean", "--worktree", ""])).toEqual([worktreeId]);
  });

  it("completes directories for --project", async () => {
    mkdirSync(path.join(sandbox.base, "elsewhere"));
    expect(await bashComplete(["status", "--project", "else"], { cwd: sandbox.base })).toEqual(["elsewhere"]);
  });

  it("offers no ids, and starts no daemon, when none runs", async () => {
    const quietHome = path.join(sandbox.base, "quiet-home");
    expect(await bashComplete(["attach", ""], { env: { PU_HOME: quietHome } })).toEqual([]);
    expect(existsSync(path.join(quietHome, "daemon.pid"))).toBe(false);
    expect(existsSync(path.join(quietHome, "daemon.sock"))).toBe(false);
  });

  it("rejects a shell it has no script for", async () => {
    const run = await sandbox.pu(["completion", "fish"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/bash or zsh/);
  });
});

// zsh is not on every machine (this project's dev machines have no zsh by default); when it is,
// the script is parsed and its function run with zsh's completion builtins stood in for.
const zsh = which("zsh");
describe.skipIf(zsh === undefined)("pu completion zsh", () => {
  async function zshComplete(words: string[]): Promise<string[]> {
    const script = [
      // Stand-ins for compsys: record what _pu hands to it.
      "compdef() { print -r -- \"compdef $*\" >&2 }",
      "_describe() { local name=${@[-1]}; print -rl -- \"${(@P)name}\" }",
      "_files() { print -r -- \"_files $*\" }",
      "source <(pu completion zsh) || exit 9",
      'words=(pu "$@"); CURRENT=${#words}',
      "_pu",
    ].join("\n");
    const { stdout } = await execFileAsync(zsh!, ["-f", "-c", script, "zsh", ...words], { cwd: sandbox.root, env: shellEnv(), timeout: 30_000 });
    return stdout.split("\n").filter((line) => line !== "");
  }

  it("parses", async () => {
    const text = await sandbox.ok(["completion", "zsh"]);
    await execFileAsync(zsh!, ["-f", "-n", "-c", text]);
  });

  it("offers commands, subcommands, options and agent ids with descriptions", async () => {
    expect(await zshComplete(["trigger", "l"])).toEqual([expect.stringMatching(/^list:List triggers/), expect.stringMatching(/^log:Show an agent's gate runs/)]);
    expect(await zshComplete(["spawn", "--ro"])).toEqual(["--root:Run in the project root, without a worktree"]);
    expect((await zshComplete(["attach", ""])).map((line) => line.split(":")[0]).sort()).toEqual([rootAgent, worktreeAgent].sort());
    expect(await zshComplete(["status", "--project", ""])).toEqual(["_files -/"]);
  });
});
