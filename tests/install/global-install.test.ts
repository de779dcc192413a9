// `npm install -g` of the packed tarballs gives a working `pu` on PATH: the installed CLI
// starts the installed daemon (never the workspace's), runs a real agent in a real PTY, and
// stops it again. Everything lives in temp dirs: the tarballs, the npm prefix, PU_HOME and
// the project.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox, REPO_ROOT, allAgents, type StatusJson } from "../helpers/pu-sandbox.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";
import { npm, npmEnv, packAll } from "./packed.js";

const execFileAsync = promisify(execFile);

let sandbox: PuSandbox;
let prefix: string;
let installedPu: string;
const version = (JSON.parse(readFileSync(path.join(REPO_ROOT, "packages/pu-cli/package.json"), "utf8")) as { version: string }).version;

/** Runs the `pu` that PATH finds first: the installed one (the workspace's bin is not on PATH). */
async function pu(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = sandbox.env({ PATH: `${path.join(prefix, "bin")}:${process.env.PATH ?? ""}`, ...extraEnv });
  try {
    const { stdout, stderr } = await execFileAsync("pu", args, { cwd: sandbox.root, env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  } finally {
    sandbox.noteDaemonPid();
  }
}

async function puOk(args: string[]): Promise<string> {
  const r = await pu(args);
  if (r.code !== 0) throw new Error(`installed pu ${args.join(" ")} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

beforeAll(async () => {
  sandbox = new PuSandbox("pu-install-");
  prefix = path.join(sandbox.base, "prefix");
  const packs = path.join(sandbox.base, "tarballs");
  mkdirSync(packs);
  const tarballs = await packAll(packs);
  const started = Date.now();
  await npm(["install", "--global", "--prefix", prefix, ...tarballs.all], sandbox.base, npmEnv());
  // Measured 8-12 s on the shared 2-core dev machine with a warm npm cache (node-pty compiles from source).
  console.log(`npm install -g of ${tarballs.all.length} tarballs took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  installedPu = path.join(prefix, "bin", "pu");
}, 300_000);

afterAll(async () => {
  const leftovers = await sandbox.teardown();
  expect(leftovers).toEqual([]);
});

describe("pu installed from the packed tarballs", () => {
  it("is on PATH and prints the package's version for --version and -v", async () => {
    const { stdout: which } = await execFileAsync("sh", ["-c", 'command -v pu'], { env: { ...process.env, PATH: `${path.join(prefix, "bin")}:${process.env.PATH ?? ""}` } });
    expect(which.trim()).toBe(installedPu);
    // The bin links into the installed package, not into this workspace.
    expect(realpathSync(installedPu)).toBe(path.join(prefix, "lib/node_modules/@pu/cli/bin/pu"));
    for (const flag of ["--version", "-v"]) expect(await pu([flag])).toMatchObject({ code: 0, stdout: `pu ${version}\n` });
  });

  it("starts its own daemon, runs an agent in the project root, shows it, and stops", async () => {
    await puOk(["init"]);
    const spawned = JSON.parse(await puOk(["spawn", "--root", "--command", "sh", "--json"])) as { agentId: string; agent: { pid: number } };
    sandbox.notePids(spawned);
    const daemonPid = sandbox.noteDaemonPid();
    expect(daemonPid).toBeDefined();
    // The daemon the installed CLI started is the installed engine.
    const cmdline = readFileSync(`/proc/${daemonPid}/cmdline`, "utf8").split("\0");
    // Node's own flags (the daemon's young generation) come first; the script is the first argument after them.
    expect(cmdline.slice(1).find((arg) => !arg.startsWith("--"))).toBe(path.join(prefix, "lib/node_modules/@pu/engine/bin/pu-engine"));
    expect(cmdline.join(" ")).not.toContain(REPO_ROOT);

    const report = JSON.parse(await puOk(["status", "--json"])) as StatusJson;
    sandbox.notePids(report);
    const agent = allAgents(report).find((a) => a.id === spawned.agentId);
    expect(agent).toMatchObject({ id: spawned.agentId, live: true, pid: spawned.agent.pid });
    expect(report.worktrees).toEqual({});
    // The installed daemon reports the same version as the installed CLI.
    expect(JSON.parse(await puOk(["daemon", "status", "--json"]))).toMatchObject({ running: true, daemonVersion: version });

    // The agent really runs in a PTY: what it is told to print comes back through the installed CLI.
    await puOk(["send", spawned.agentId, "echo installed-$((6*7))"]);
    await waitFor("the agent's echo in pu logs", async () => (await puOk(["logs", spawned.agentId])).includes("installed-42"), 30_000, 200);

    expect(await pu(["daemon", "stop"])).toMatchObject({ code: 0 });
    await waitFor("the daemon and its agent to exit", () => !isProcessAlive(daemonPid!) && !isProcessAlive(spawned.agent.pid), 20_000);
    expect(await pu(["daemon", "status"])).toMatchObject({ code: 4 });
  });

  it("completes from the installed package", async () => {
    const r = await pu(["completion", "--candidates", "--", "trigger", "l"]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").map((line) => line.split("\t")[0])).toEqual(["words", "list", "log", ""]);
  });
});
