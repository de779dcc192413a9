import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinAgentTypes, type AgentTypeConfig } from "@pu/core/config";
import { isPuError } from "@pu/core/errors";
import { buildEnv, buildLaunch, deliverPrompt, hasShellSyntax, type Launch } from "../src/agents/launch-command.js";
import { AgentSession } from "../src/session/agent-session.js";

const FAKE_AGENT = fileURLToPath(new URL("./fixtures/fake-agent.mjs", import.meta.url));
const SESSION = "550e8400-e29b-41d4-a716-446655440000";
const builtins = builtinAgentTypes({ SHELL: "/bin/bash" });
const type = (name: string, overrides: Partial<AgentTypeConfig> = {}) => ({ ...builtins[name]!, ...overrides, name });
const custom = (config: Partial<AgentTypeConfig> & { command: string }) => ({
  interactive: true,
  launchArgs: [],
  ...config,
  name: "custom",
});

/** A prompt that would do damage if any shell ever saw it. */
const HOSTILE_PROMPT = `fix it $(touch pwned) \`touch pwned2\` 'single' "double" ; touch pwned3 && echo $HOME`;

let dir: string;
const sessions: AgentSession[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pu-launch-"));
});

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.kill({ graceMs: 500 })));
  await rm(dir, { recursive: true, force: true });
});

function run(launch: Launch): AgentSession {
  const env = buildEnv({ ...process.env, PU_HOME: join(dir, "home") }, { agentId: "ag-launch", projectRoot: dir, worktreeId: "wt-abc" });
  const session = AgentSession.spawn({ agentId: "ag-launch", file: launch.file, args: launch.args, cwd: dir, env });
  sessions.push(session);
  return session;
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const noDamage = () => ["pwned", "pwned2", "pwned3"].filter((f) => existsSync(join(dir, f)));

describe("buildLaunch", () => {
  it("claude: session id, launch args, plan mode, extra args; the prompt is typed", () => {
    const launch = buildLaunch(type("claude", { launchArgs: ["--verbose"] }), {
      sessionId: SESSION,
      planMode: true,
      extraArgs: ["--model", "opus"],
      prompt: "hello",
    });
    expect(launch.file).toBe("claude");
    expect(launch.args).toEqual(["--session-id", SESSION, "--verbose", "--permission-mode", "plan", "--model", "opus"]);
    expect(launch.promptToType).toBe("hello");
    expect(launch.commandLine).toBe(`claude --session-id ${SESSION} --verbose --permission-mode plan --model opus`);
  });

  it("claude: resumes its session, and cannot start or resume without one", () => {
    expect(buildLaunch(type("claude"), { resume: true, sessionId: SESSION, prompt: "old" })).toEqual({
      file: "claude",
      args: ["--resume", SESSION],
      commandLine: `claude --resume ${SESSION}`,
    });
    for (const [opts, code] of [
      [{}, "INVALID_ARGUMENT"],
      [{ resume: true }, "RESUME_FAILED"],
    ] as const) {
      let error: unknown;
      try {
        buildLaunch(type("claude"), opts);
      } catch (err) {
        error = err;
      }
      expect(isPuError(error) && error.code).toBe(code);
    }
  });

  it("codex: the prompt is a positional argument; resume continues the last session", () => {
    expect(buildLaunch(type("codex"), { prompt: "do it", extraArgs: ["--full-auto"] })).toMatchObject({
      file: "codex",
      args: ["--full-auto", "do it"],
      commandLine: "codex --full-auto 'do it'",
    });
    expect(buildLaunch(type("codex"), { prompt: "do it" }).promptToType).toBeUndefined();
    expect(buildLaunch(type("codex"), { resume: true, prompt: "do it" }).args).toEqual(["resume", "--last"]);
  });

  it("a prompt starting with '-' reaches the program as a value, never as one of its options", () => {
    // Codex reads `-c key=value` as a config override; a ticket or page must not set one.
    const hostile = '-cnotify=["touch","/tmp/pwned"]';
    expect(buildLaunch(type("codex"), { prompt: hostile }).args).toEqual([` ${hostile}`]);
    expect(buildLaunch(type("opencode"), { prompt: "--model evil" }).args).toEqual(["--prompt", " --model evil"]);
    expect(buildLaunch(custom({ command: "tool", interactive: false, promptFlag: "-p" }), { prompt: "-x" }).args).toEqual(["-p", " -x"]);
    // Typed prompts and prompts without a leading dash are as they were.
    expect(buildLaunch(type("claude"), { sessionId: SESSION, prompt: "-x" }).promptToType).toBe("-x");
    expect(buildLaunch(type("codex"), { prompt: "a -x" }).args).toEqual(["a -x"]);
  });

  it("opencode: --prompt <p>; resume continues", () => {
    expect(buildLaunch(type("opencode"), { prompt: "p q" }).args).toEqual(["--prompt", "p q"]);
    expect(buildLaunch(type("opencode"), { resume: true }).args).toEqual(["--continue"]);
  });

  it("terminal: the shell, with the prompt typed; resume is a fresh shell", () => {
    expect(buildLaunch(type("terminal"), { prompt: "ls" })).toEqual({ file: "/bin/bash", args: [], promptToType: "ls", commandLine: "/bin/bash" });
    expect(buildLaunch(type("terminal"), { shell: "/bin/zsh" }).file).toBe("/bin/zsh");
    expect(buildLaunch(type("terminal"), { resume: true, prompt: "ls" })).toEqual({ file: "/bin/bash", args: [], commandLine: "/bin/bash" });
  });

  it("custom types: promptFlag, else positional when not interactive, else typed", () => {
    const base = { command: "aider", launchArgs: ["--yes"] };
    expect(buildLaunch(custom({ ...base, promptFlag: "--message" }), { prompt: "p" })).toMatchObject({
      file: "aider",
      args: ["--yes", "--message", "p"],
    });
    expect(buildLaunch(custom({ ...base, interactive: false }), { prompt: "p", extraArgs: ["-x"] }).args).toEqual(["--yes", "-x", "p"]);
    const typed = buildLaunch(custom(base), { prompt: "p" });
    expect([typed.args, typed.promptToType]).toEqual([["--yes"], "p"]);
    expect(buildLaunch(custom({ command: "npx my-agent" }), {}).args).toEqual(["my-agent"]);
    expect(buildLaunch(custom({ ...base, resumeArgs: ["--restore={sessionId}"] }), { resume: true, sessionId: "s1" }).args).toEqual([
      "--restore=s1",
      "--yes",
    ]);
    // No resume args: a fresh start, without re-sending the old prompt.
    expect(buildLaunch(custom({ ...base, interactive: false }), { resume: true, prompt: "p" }).args).toEqual(["--yes"]);
  });

  it("--command: executed directly unless it contains shell syntax; any prompt is typed", () => {
    expect(buildLaunch(type("claude"), { command: "  npm   test -- --watch ", prompt: "hi" })).toEqual({
      file: "npm",
      args: ["test", "--", "--watch"],
      promptToType: "hi",
      commandLine: "  npm   test -- --watch ",
    });
    expect(buildLaunch(type("claude"), { command: "make test | tee log" })).toEqual({
      file: "/bin/sh",
      args: ["-c", "make test | tee log"],
      commandLine: "make test | tee log",
    });
  });

  it("recognises shell syntax", () => {
    const shell = [
      `echo "a b"`, "echo 'a'", "echo $HOME", "echo `date`", "a | b", "a && b", "a; b", "a > f", "a < f", "(a)",
      "ls *.ts", "ls file?", "ls [ab]", "cd ~", "a\nb", "FOO=1 npm test", "echo a\\ b", "a # comment",
    ];
    const plain = ["npm test", "claude --model opus", "./run.sh --x=1", "node /tmp/a-b_c.js", "git commit -m msg"];
    for (const command of shell) expect([command, hasShellSyntax(command)]).toEqual([command, true]);
    for (const command of plain) expect([command, hasShellSyntax(command)]).toEqual([command, false]);
  });
});

describe("prompts never reach a shell", () => {
  it("a positional prompt arrives as one verbatim argument", async () => {
    // A custom agent that is itself a shell script: the prompt must arrive as $1, untouched.
    const agent = custom({ command: "/bin/sh", launchArgs: ["-c", `printf '%s' "$1" > got.txt`, "sh"], interactive: false });
    const session = run(buildLaunch(agent, { prompt: HOSTILE_PROMPT }));
    await expect(session.exited).resolves.toBe(0);
    expect(await readFile(join(dir, "got.txt"), "utf8")).toBe(HOSTILE_PROMPT);
    expect(noDamage()).toEqual([]);
  });

  it("a configured command with shell syntax gets the prompt as a word, not as script text", async () => {
    const agent = custom({ command: `printf '%s' >got.txt`, interactive: false });
    const launch = buildLaunch(agent, { prompt: HOSTILE_PROMPT });
    expect(launch.file).toBe("/bin/sh");
    const session = run(launch);
    await expect(session.exited).resolves.toBe(0);
    expect(await readFile(join(dir, "got.txt"), "utf8")).toBe(HOSTILE_PROMPT);
    expect(noDamage()).toEqual([]);
  });

  it("a typed prompt reaches the agent verbatim and the agent acts on it", async () => {
    const launch = buildLaunch(type("claude"), {
      command: `${process.execPath} ${FAKE_AGENT}`,
      prompt: `write typed.txt ${HOSTILE_PROMPT}`,
    });
    expect(launch.file).toBe(process.execPath);
    const session = run(launch);
    await expect(deliverPrompt(session, launch.promptToType!)).resolves.toBe(true);
    await waitFor(() => session.ring.read(0).data.toString().includes("wrote typed.txt"), "the agent to write the file");
    expect(await readFile(join(dir, "typed.txt"), "utf8")).toBe(`${HOSTILE_PROMPT}\n`);
    expect(noDamage()).toEqual([]);
  });
});

describe("deliverPrompt", () => {
  it("types in chunks once the agent is quiet, then presses Enter", async () => {
    const session = run({ file: process.execPath, args: [FAKE_AGENT], commandLine: "" });
    const long = `echo ${"0123456789".repeat(20)}-end`;
    await expect(deliverPrompt(session, long, { chunkBytes: 16 })).resolves.toBe(true);
    await waitFor(() => /\r\n(0123456789){20}-end\r\n/.test(session.ring.read(0).data.toString()), "the agent's answer");
  });

  it("types even into a program that prints nothing", async () => {
    const session = run({ file: process.execPath, args: [FAKE_AGENT, "--no-prompt"], commandLine: "" });
    await expect(deliverPrompt(session, "echo silent-ok", { noOutputMs: 300 })).resolves.toBe(true);
    await waitFor(() => session.ring.read(0).data.toString().includes("\r\nsilent-ok\r\n"), "the agent's answer");
  });

  it("gives up quietly when the agent exits first", async () => {
    const session = run({ file: "/bin/sh", args: ["-c", "exit 0"], commandLine: "" });
    await expect(deliverPrompt(session, "too late", { noOutputMs: 60_000, quietMs: 60_000 })).resolves.toBe(false);
  });
});

describe("buildEnv", () => {
  it("drops CLAUDECODE and sets the terminal and pu variables", () => {
    const env = buildEnv({ PATH: "/bin", CLAUDECODE: "1", TERM: "dumb", PU_WORKTREE_ID: "stale" }, { agentId: "ag-1", projectRoot: "/p" });
    expect(env).toEqual({ PATH: "/bin", TERM: "xterm-256color", COLORTERM: "truecolor", PU_AGENT_ID: "ag-1", PU_PROJECT_ROOT: "/p" });
    expect(buildEnv({}, { agentId: "ag-1", projectRoot: "/p", worktreeId: "wt-1" }).PU_WORKTREE_ID).toBe("wt-1");
  });

  it("the agent sees its environment", async () => {
    const session = run({ file: process.execPath, args: [FAKE_AGENT], commandLine: "" });
    session.write("env PU_AGENT_ID\renv PU_WORKTREE_ID\renv TERM\r");
    const text = () => session.ring.read(0).data.toString();
    await waitFor(() => text().includes("env TERM=xterm-256color"), "the env answers");
    expect(text()).toContain("env PU_AGENT_ID=ag-launch");
    expect(text()).toContain("env PU_WORKTREE_ID=wt-abc");
  });
});
