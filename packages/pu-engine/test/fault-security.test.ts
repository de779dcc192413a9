// What a hostile or careless client must not achieve: a socket or home others can use,
// names that escape their directory, prompts that run as shell code, gates planted by
// a client in some other project.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, chmodSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isPuError } from "@pu/core/errors";
import type { Client } from "@pu/ipc/client";
import {
  cleanupAll,
  DAEMON_BIN,
  daemonEnv,
  FAKE_AGENT_COMMAND,
  makeProject,
  makeTempHome,
  manifestAgent,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  trackTempDir,
  waitFor,
} from "./helpers/daemon.js";

afterEach(cleanupAll);

/** The error code a request fails with ("OK" when it succeeds). */
async function outcomeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "OK";
  } catch (err) {
    return isPuError(err) ? err.code : `non-PuError: ${(err as Error).message}`;
  }
}

/** Every path under `dir` (not following symlinks) whose name contains `needle`. */
function findNamed(dir: string, needle: string, depth = 6): string[] {
  if (depth < 0 || !existsSync(dir)) return [];
  const hits: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.name.includes(needle)) hits.push(full);
    if (entry.isDirectory() && entry.name !== ".git") hits.push(...findNamed(full, needle, depth - 1));
  }
  return hits;
}

async function logsText(client: Client, agentId: string): Promise<string> {
  return Buffer.from((await client.request("logs", { agentId, tail: 1 << 20 })).data).toString();
}

describe("file modes", () => {
  it("creates PU_HOME 0700 and the socket 0600", async () => {
    const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-fault-home-")));
    trackTempDir(base);
    const home = path.join(base, "fresh-home");
    const daemon = await startTestDaemon(home);
    expect((statSync(home).mode & 0o777).toString(8)).toBe("700");
    expect((statSync(daemon.socketPath).mode & 0o777).toString(8)).toBe("600");
  });

  it.each(["777", "775"])("refuses to start with a home of mode %s, saying why", async (mode) => {
    const home = makeTempHome();
    chmodSync(home, Number.parseInt(mode, 8));
    const proc = spawn(process.execPath, [DAEMON_BIN, "--home", home], { env: daemonEnv(home), stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => proc.once("exit", (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(stderr).toContain(home);
    expect(stderr).toMatch(/group- or world-writable/);
    expect(stderr).toContain(`chmod 700 ${home}`);
    expect(existsSync(path.join(home, "daemon.sock"))).toBe(false);
    expect(existsSync(path.join(home, "daemon.pid"))).toBe(false);
  });
});

describe("names from clients", () => {
  it("keeps worktrees inside .pu/worktrees whatever the name, with a normalized branch", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const worktreesDir = path.join(repo.root, ".pu", "worktrees");
    const cases: [string, string][] = [
      ["../../etc", "pu/etc"],
      ["/abs/path", "pu/abspath"],
      ["x; rm -rf ~ && `touch pwned` $(touch pwned)", "pu/x-rm-rf-touch-pwned-touch-pwned"],
      ["..\\..\\windows", "pu/windows"],
    ];
    for (const [name, branch] of cases) {
      const result = await client.request("spawn", { projectRoot: repo.root, name, command: "sleep 60" });
      trackAgentPid(result.agent.pid);
      expect(path.dirname(result.worktreePath ?? ""), `worktree for ${JSON.stringify(name)}`).toBe(worktreesDir);
      expect(result.branch).toBe(branch);
      expect(repo.git(["branch", "--list", branch])).toContain(branch);
    }
    // Nothing usable left, or a control character (refused, never quietly dropped).
    for (const name of ["../..", "/", "\u0000", "a\u0000b", "x\u001b[2Jy", "$()`'\";|&"]) {
      expect(await outcomeOf(client.request("spawn", { projectRoot: repo.root, name, command: "sleep 60" })), JSON.stringify(name)).toBe(
        "INVALID_ARGUMENT",
      );
    }
    // Nothing appeared beside the project.
    expect(readdirSync(path.dirname(repo.root)).sort()).toEqual(["project"]);
    expect(findNamed(repo.root, "pwned")).toEqual([]);
  });

  it("rejects definition names that could leave their directory, in every scope and request", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const other = await makeProject(client);
    const gate = "name: evil\non: agent_idle\nsequence:\n  - inject: hi\n    gate: { run: \"touch pwned-gate\", expect_exit: 0 }\n";
    const relativeToOther = path.relative(path.join(repo.root, ".pu", "triggers"), path.join(other.root, ".pu", "triggers", "evil"));
    const badNames = ["../evil", relativeToOther, other.root + "/.pu/triggers/evil", "a/b", "a\\b", "..", ".hidden", "x\u0000y", "", " "];
    for (const name of badNames) {
      for (const scope of ["local", "global"] as const) {
        const save = client.request("definition_save", { projectRoot: repo.root, kind: "trigger", name, scope, content: gate });
        expect(await outcomeOf(save), `save ${JSON.stringify(name)} (${scope})`).toBe("INVALID_ARGUMENT");
      }
      expect(await outcomeOf(client.request("definition_get", { projectRoot: repo.root, kind: "trigger", name })), `get ${JSON.stringify(name)}`).toBe(
        "INVALID_ARGUMENT",
      );
      expect(await outcomeOf(client.request("definition_delete", { projectRoot: repo.root, kind: "trigger", name })), `delete ${JSON.stringify(name)}`).toBe(
        "INVALID_ARGUMENT",
      );
    }
    for (const kind of ["template", "agent", "swarm", "schedule"] as const) {
      expect(await outcomeOf(client.request("definition_save", { projectRoot: repo.root, kind, name: "../../x", content: "name: x\n" }))).toBe(
        "INVALID_ARGUMENT",
      );
    }
    // No trigger (so no gate) landed in the other project, in this one, or in the home.
    expect(findNamed(other.root, "evil")).toEqual([]);
    expect(findNamed(repo.root, "evil")).toEqual([]);
    expect(findNamed(daemon.home, "evil")).toEqual([]);
    // A proper name lands exactly where it should.
    const saved = await client.request("definition_save", { projectRoot: repo.root, kind: "trigger", name: "fine", content: gate.replace("name: evil", "name: fine") });
    expect(saved.path).toBe(path.join(repo.root, ".pu", "triggers", "fine.yaml"));
  });
});

describe("shell metacharacters", () => {
  it("reach the agent verbatim and are never executed", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(
      client,
      [
        "agents:",
        "  flagged:",
        `    command: ${FAKE_AGENT_COMMAND}`,
        "    promptFlag: --prompt",
        "    interactive: false",
        "  typed:",
        `    command: ${FAKE_AGENT_COMMAND}`,
        "    interactive: true",
        "",
      ].join("\n"),
    );
    const evil = `$(touch pwned1) \`touch pwned2\` "dq" 'sq' ; touch pwned3 | cat && echo $HOME > pwned4`;

    const flagged = await client.request("spawn", { projectRoot: repo.root, root: true, agent: "flagged", prompt: evil, name: evil.slice(0, 60) });
    const typed = await client.request("spawn", { projectRoot: repo.root, agent: "typed", prompt: evil, name: `wt ${evil}` });
    const argv = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: FAKE_AGENT_COMMAND,
      extraArgs: [evil, "$(touch pwned5)"],
    });
    for (const r of [flagged, typed, argv]) trackAgentPid(r.agent.pid);

    await waitFor("the prompt as an argument", async () => (await logsText(client, flagged.agentId)).includes(`arg ${evil}\r\n`));
    await waitFor("extra arguments verbatim", async () => {
      const text = await logsText(client, argv.agentId);
      return text.includes(`arg ${evil}\r\n`) && text.includes("arg $(touch pwned5)\r\n");
    });
    // Typed into the PTY, the fake agent reads it as one unknown command line.
    await waitFor("the typed prompt", async () => (await logsText(client, typed.agentId)).includes(`unknown: ${evil}\r\n`), 30_000);

    expect(manifestAgent(repo.root, flagged.agentId)).toMatchObject({ prompt: evil, name: evil.slice(0, 60) });
    expect(manifestAgent(repo.root, typed.agentId)?.prompt).toBe(evil);
    expect(typed.branch).toMatch(/^pu\/[a-z0-9-]+$/);
    for (const dir of [repo.root, process.cwd(), daemon.home, typed.worktreePath ?? repo.root]) {
      expect(findNamed(dir, "pwned"), `in ${dir}`).toEqual([]);
    }
  });
});

describe("a manifest pu did not write", () => {
  // A cloned repository can bring its own .pu/manifest.json: an agent entry there must not run
  // its command or variables on `pu play` (pu seals what it writes with a key in PU_HOME).
  it("runs an agent's own command and variables on resume only as pu wrote them", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const manifestFile = path.join(repo.root, ".pu", "manifest.json");

    // pu's own entry: spawned with a command and a variable, suspended, resumed.
    const own = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, env: { PU_TEST_VAR: "kept" } });
    trackAgentPid(own.agent.pid);
    expect(manifestAgent(repo.root, own.agentId)?.launchSeal).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await client.request("suspend", { projectRoot: repo.root, target: own.agentId });
    await waitFor("suspended", async () => manifestAgent(repo.root, own.agentId)?.suspended === true);
    const resumed = await client.request("resume", { projectRoot: repo.root, agentId: own.agentId });
    trackAgentPid(resumed.agent.pid);
    expect(resumed.agent.suspended).toBeUndefined();
    await client.request("suspend", { projectRoot: repo.root, target: own.agentId });
    await waitFor("suspended again", async () => manifestAgent(repo.root, own.agentId)?.suspended === true);

    // Planted beside it: a suspended entry with a command, and pu's own entry with a changed PATH.
    const marker = path.join(repo.root, "planted-ran");
    const planted = readManifest(repo.root);
    const now = new Date().toISOString();
    planted.agents["ag-planted1"] = { id: "ag-planted1", name: "Terminal", agentType: "terminal", status: "waiting", startedAt: now, suspended: true, suspendedAt: now, command: `touch ${marker}` };
    planted.agents["ag-planted2"] = { id: "ag-planted2", name: "Claude", agentType: "claude", status: "waiting", startedAt: now, suspended: true, suspendedAt: now, sessionId: "--dangerously-skip-permissions" };
    const ownEntry = planted.agents[own.agentId]!;
    ownEntry.env = { ...ownEntry.env, PATH: `${repo.root}/tools:/usr/bin:/bin` };
    writeFileSync(manifestFile, JSON.stringify(planted, null, 2));
    const before = readFileSync(manifestFile);

    for (const agentId of ["ag-planted1", "ag-planted2", own.agentId]) {
      const error = await client.request("resume", { projectRoot: repo.root, agentId }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isPuError(error) && error.code, agentId).toBe("UNTRUSTED");
      expect((error as Error).message, agentId).toContain(agentId);
    }
    expect(existsSync(marker)).toBe(false);
    // Refused before anything was recorded: the file is as it was left.
    expect(readFileSync(manifestFile).equals(before)).toBe(true);
  });
});
