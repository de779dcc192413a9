// Command-line rough edges a new user hit: a bare id for kill, `kill --all` saying why root
// agents stayed, `--env` for the agent's environment, `--file -` and `--var` with a trigger.
import { readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPuOnPty } from "../helpers/pty-pu.js";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";

describe("CLI hardening", { timeout: 120_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-cli-hardening-");
    await sb.puJson(["init"]);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("--env reaches the agent's environment and survives bench and play; a bad name is a usage error", async () => {
    const spawned = await sb.spawnAgent(["--agent", "terminal", "--root", "--env", "PU_E2E_GREETING=hello there", "--env", "EMPTY="]);
    await sb.ok(["send", spawned.agentId, 'echo "greeting=[$PU_E2E_GREETING] empty=[${EMPTY-unset}]"']);
    await sb.waitForLogs(spawned.agentId, "greeting=[hello there] empty=[]");
    await sb.ok(["bench", spawned.agentId]);
    await sb.ok(["play", spawned.agentId]);
    await sb.ok(["send", spawned.agentId, 'echo "again=[$PU_E2E_GREETING]"']);
    await sb.waitForLogs(spawned.agentId, "again=[hello there]");

    const bad = await sb.pu(["spawn", "--agent", "terminal", "--root", "--env", "1BAD=x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^pu: --env 1BAD=…: "1BAD" is not an environment variable name[^\n]*\n$/);
  });

  it("kill takes a bare agent id; kill --all says which root agents it left running and how to stop them", async () => {
    const rooted = await sb.spawnAgent(["--agent", "terminal", "--root"]);
    const none = await sb.ok(["kill", "--all"]);
    expect(none).toContain("no worktree agent to kill");
    expect(none).toMatch(/\d+ root agents? (is|are) still running: --all stops worktree agents only; add --include-root/);
    expect((await sb.agent(rooted.agentId)).live).toBe(true);
    const killed = await sb.ok(["kill", rooted.agentId]);
    expect(killed).toContain(`killed ${rooted.agentId}`);
    expect((await sb.agent(rooted.agentId)).live).toBe(false);
    const both = await sb.pu(["kill", rooted.agentId, "--all"]);
    expect(both.code).toBe(2);
  });

  it("spawn --file - reads the prompt from stdin", async () => {
    const run = await sb.pu(["spawn", "--file", "-", "--command", FAKE_AGENT_COMMAND, "--root", "--json"], { input: "echo from stdin\n" });
    expect(run.code, run.stderr).toBe(0);
    const { agentId } = JSON.parse(run.stdout) as { agentId: string };
    await sb.waitForLogs(agentId, "from stdin");
  });

  it("--var fills a bound trigger's placeholders, as docs/workflows.md shows", async () => {
    const source = path.join(sb.base, "t1.yaml");
    writeFileSync(source, `on: agent_idle\nsequence:\n  - inject: "echo suite is {{SUITE}}"\n`);
    await sb.ok(["trigger", "create", "t1", "--file", source]);
    const spawned = await sb.spawnAgent(["--command", FAKE_AGENT_COMMAND, "--root", "--trigger", "t1", "--var", "SUITE=e2e"]);
    await sb.waitForLogs(spawned.agentId, "suite is e2e");
  });
  it("unknown keys in a definition file are warned about on create, show and list, and the rest is used", async () => {
    const source = path.join(sb.base, "typo.yaml");
    writeFileSync(source, `on: agent_idle\nsequnce: []\nsequence:\n  - inject: "echo ok"\n`);
    const created = await sb.pu(["trigger", "create", "typo", "--file", source]);
    expect(created.code).toBe(0);
    expect(created.stderr).toMatch(/^pu: warning: .*typo\.yaml: unknown key "sequnce" ignored\n$/);
    const shown = await sb.pu(["trigger", "show", "typo"]);
    expect(shown.code).toBe(0);
    expect(shown.stderr).toContain('unknown key "sequnce" ignored');
    const listed = await sb.pu(["trigger", "list"]);
    expect(listed.stderr).toContain('unknown key "sequnce" ignored');
    expect(listed.stdout).toContain("typo");
  });
  it("status --watch on a terminal keeps IDLE counting while nothing changes state", async () => {
    const quiet = await sb.spawnAgent(["--command", FAKE_AGENT_COMMAND, "--root", "--name", "quiet"]);
    await sb.waitForAgent(quiet.agentId, "idle for a second", (a) => (a.idleSeconds ?? 0) >= 1);
    const watch = runPuOnPty(sb, ["status", "--watch"], 160, 40);
    try {
      // Frames are "home + clear" redraws; read the IDLE cell of the quiet agent's row in each.
      const idleOf = (frame: string) => {
        const row = frame.split("\n").find((line) => line.includes(quiet.agentId));
        const cell = row ? /\s(\d+)s\s/.exec(row.replace(/\x1b\[[0-9;]*m/g, "")) : null;
        return cell ? Number(cell[1]) : undefined;
      };
      const frames = () => watch.screen().split("\x1b[H\x1b[2J").map(idleOf).filter((v): v is number => v !== undefined);
      await sb.waitForAgent(quiet.agentId, "three more seconds to pass", (a) => (a.idleSeconds ?? 0) >= 4, 30_000);
      const seen = frames();
      expect(seen.length, "frames drawn while nothing changed").toBeGreaterThanOrEqual(3);
      expect(Math.max(...seen) - Math.min(...seen), `idle values seen: ${seen.join(",")}`).toBeGreaterThanOrEqual(2);
    } finally {
      watch.kill();
      await watch.exited;
    }
    await sb.ok(["kill", quiet.agentId]);
  });
  it("pu send to a benched agent says it is benched and how to resume it", async () => {
    const agent = await sb.spawnAgent(["--agent", "terminal", "--root"]);
    await sb.ok(["bench", agent.agentId]);
    const sent = await sb.pu(["send", agent.agentId, "hello"]);
    expect(sent.code).toBe(1);
    expect(sent.stderr).toBe(`pu: ${agent.agentId} is benched (suspended); \`pu play ${agent.agentId}\` resumes it\n`);
  });

  it("the manifest (prompts) and gate records (test output) are readable by their owner only", async () => {
    const source = path.join(sb.base, "gated.yaml");
    writeFileSync(source, `on: agent_idle\nsequence:\n  - gate: { run: "echo secret test output" }\n`);
    await sb.ok(["trigger", "create", "gated", "--file", source]);
    const spawned = await sb.spawnAgent(["a private prompt", "--command", FAKE_AGENT_COMMAND, "--root", "--trigger", "gated"]);
    await sb.waitForAgent(spawned.agentId, "its gate to run", (a) => a.triggerState === "completed", 60_000);
    const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
    expect(mode(path.join(sb.root, ".pu", "manifest.json"))).toBe("600");
    const gates = path.join(sb.root, ".pu", "gates");
    const records = readdirSync(gates);
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) expect(mode(path.join(gates, record)), record).toBe("600");
  });
  it("a PU_HOME whose socket path is over the OS limit is one clear error, at once, with no socket anywhere", async () => {
    const longHome = path.join(sb.base, "h".repeat(120));
    const started = Date.now();
    const run = await sb.pu(["status"], { env: { PU_HOME: longHome } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^pu: the pu daemon's socket path .*daemon\.sock is \d+ bytes, over this system's limit of 10[37] for a Unix socket; set PU_HOME to a shorter directory\n$/);
    expect(Date.now() - started).toBeLessThan(4000);
    // The sandbox's own daemon socket is the only one (the OS would have cut the long path short).
    const sockets = readdirSync(sb.base, { recursive: true }).map(String).filter((f) => f.includes("daemon.so"));
    expect(sockets).toEqual([path.relative(sb.base, path.join(sb.home, "daemon.sock"))]);
  });
  it("diff shows every worktree under its own header, and flags one whose directory is gone without hiding the others", async () => {
    const one = await sb.spawnAgent(["--agent", "terminal", "--name", "diff-one"]);
    const two = await sb.spawnAgent(["--agent", "terminal", "--name", "diff-two"]);
    writeFileSync(path.join(one.worktreePath!, "a.txt"), "from one\n");
    sb.git(["add", "a.txt"], one.worktreePath!);
    sb.git(["commit", "-qm", "one's work"], one.worktreePath!);
    const plain = await sb.ok(["diff"]);
    expect(plain).toContain(`== ${one.worktreeId} diff-one (pu/diff-one vs main) ==`);
    expect(plain).toContain(`== ${two.worktreeId} diff-two (pu/diff-two vs main) ==`);
    expect(plain).toContain("+from one");

    await sb.ok(["kill", two.agentId]);
    rmSync(two.worktreePath!, { recursive: true, force: true });
    const stat = await sb.pu(["diff", "--stat"]);
    expect(stat.code).toBe(1);
    expect(stat.stdout).toMatch(new RegExp(`${one.worktreeId} diff-one \\(pu/diff-one vs main\\): 1 file\\(s\\), \\+1 -0`));
    expect(stat.stdout).toContain(`${two.worktreeId} diff-two: cannot diff:`);
    expect(stat.stderr).toMatch(new RegExp(`^pu: ${two.worktreeId} \\(diff-two\\) could not be diffed: [^\\n]+\\n$`));
    await sb.ok(["clean", "--all", "--force"]);
  });
  it("pu send refuses control characters in TEXT (they would be key presses) and points to --keys", async () => {
    const agent = await sb.spawnAgent(["--agent", "terminal", "--root"]);
    const sent = await sb.pu(["send", agent.agentId, "make\x03 it stop"]);
    expect(sent.code).toBe(2);
    expect(sent.stderr).toMatch(/^pu: TEXT contains the control character \\x03 at position 5; .*pu send ID --keys[^\n]*\n$/);
    await sb.ok(["kill", agent.agentId]);
  });
});
