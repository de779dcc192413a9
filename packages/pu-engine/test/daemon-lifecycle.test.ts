import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame } from "@pu/ipc/frame";
import {
  cleanupAll,
  DAEMON_BIN,
  daemonEnv,
  FAKE_AGENT_COMMAND,
  isProcessAlive,
  makeProject,
  makeTempHome,
  manifestAgent,
  startTestDaemon,
  trackAgentPid,
  trackTempDir,
} from "./helpers/daemon.js";
import { makeTempRepo } from "./helpers/git-repo.js";

afterEach(cleanupAll);

describe("daemon lifecycle", () => {
  it("answers health, writes a pid file and a 0600 socket, and logs its start", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const health = await client.request("health", {});
    expect(health.pid).toBe(daemon.pid);
    expect(health.home).toBe(daemon.home);
    expect(health.liveAgentCount).toBe(0);
    expect(readFileSync(path.join(daemon.home, "daemon.pid"), "utf8").trim()).toBe(String(daemon.pid));
    expect(statSync(daemon.socketPath).mode & 0o777).toBe(0o600);
    const events = readFileSync(path.join(daemon.home, "daemon.log"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string });
    expect(events.map((e) => e.event)).toContain("start");
  });

  it("refuses a second daemon on the same home and keeps the first one serving", async () => {
    const daemon = await startTestDaemon();
    const second = spawnSync(process.execPath, [DAEMON_BIN, "--home", daemon.home], {
      env: daemonEnv(daemon.home),
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(/already running/);
    const client = await daemon.client();
    expect((await client.request("health", {})).pid).toBe(daemon.pid);
  });

  it("replaces a stale pid file left by a dead process", async () => {
    const home = makeTempHome();
    // A pid that is surely not a pu daemon: this test's own short-lived child, already gone.
    const gone = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" }).stdout.trim();
    writeFileSync(path.join(home, "daemon.pid"), `${gone}\n`);
    const daemon = await startTestDaemon(home);
    expect(readFileSync(path.join(home, "daemon.pid"), "utf8").trim()).toBe(String(daemon.pid));
  });

  it("refuses a world-writable home", () => {
    const home = makeTempHome();
    spawnSync("chmod", ["0777", home]);
    const run = spawnSync(process.execPath, [DAEMON_BIN, "--home", home], { env: daemonEnv(home), encoding: "utf8", timeout: 20_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/writable/);
  });

  it("shuts down on request: replies, then removes pid and socket and exits 0", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    expect(await client.request("shutdown", {})).toEqual({ stopping: true });
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(path.join(daemon.home, "daemon.pid"))).toBe(false);
    expect(existsSync(daemon.socketPath)).toBe(false);
    const events = readFileSync(path.join(daemon.home, "daemon.log"), "utf8");
    expect(events).toContain('"event":"shutdown"');
  });

  it("SIGTERM stops the daemon the same way, suspending its agents", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    daemon.proc.kill("SIGTERM");
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(manifestAgent(repo.root, spawned.agentId)).toMatchObject({ status: "waiting", suspended: true });
    expect(isProcessAlive(spawned.agent.pid ?? -1)).toBe(false);
    expect(existsSync(path.join(daemon.home, "daemon.pid"))).toBe(false);
    expect(existsSync(daemon.socketPath)).toBe(false);
  });

  it("a client sending garbage does not affect another client", async () => {
    const daemon = await startTestDaemon();
    const good = await daemon.client();
    const bad = createConnection(daemon.socketPath);
    await new Promise<void>((resolve) => bad.once("connect", () => resolve()));
    const badClosed = new Promise<void>((resolve) => bad.once("close", () => resolve()));
    bad.on("error", () => undefined);
    bad.on("data", () => undefined);
    bad.write(encodeFrame({ type: "hello", id: 1, protocolVersion: 1, client: "bad" }));
    // A length prefix promising 2 GiB, then junk.
    bad.write(Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 2, 3]));
    await badClosed;
    const raw = createConnection(daemon.socketPath);
    raw.on("error", () => undefined);
    raw.on("data", () => undefined);
    await new Promise<void>((resolve) => raw.once("connect", () => resolve()));
    // A well-framed body that is not msgpack at all.
    raw.write(Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.from([0xc1, 0xc1, 0xc1])]));
    await new Promise<void>((resolve) => raw.once("close", () => resolve()));
    expect((await good.request("health", {})).pid).toBe(daemon.pid);
  });
});

describe("projects", () => {
  it("init needs a git repository, creates manifest and config once, never clobbers", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const notGit = makeTempHome();
    await expect(client.request("init", { projectRoot: notGit })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("not a git repository"),
    });

    const repo = makeTempRepo();
    trackTempDir(path.dirname(repo.root));
    const first = await client.request("init", { projectRoot: path.join(repo.root) });
    expect(first).toMatchObject({ created: true, projectRoot: repo.root });
    const config = path.join(repo.root, ".pu", "config.yaml");
    writeFileSync(config, "defaultAgent: terminal\n");
    const again = await client.request("init", { projectRoot: repo.root });
    expect(again.created).toBe(false);
    expect(readFileSync(config, "utf8")).toBe("defaultAgent: terminal\n");
    // .pu/ is kept out of git status.
    expect(repo.git(["status", "--porcelain"])).toBe("");
    const projects = JSON.parse(readFileSync(path.join(daemon.home, "projects.json"), "utf8")) as { projects: { root: string }[] };
    expect(projects.projects.map((p) => p.root)).toEqual([repo.root]);

    const manifest = path.join(repo.root, ".pu", "manifest.json");
    writeFileSync(manifest, "{ not json");
    await expect(client.request("init", { projectRoot: repo.root })).rejects.toMatchObject({ code: "MANIFEST_INVALID" });
    expect(readFileSync(manifest, "utf8")).toBe("{ not json");
  });

  it("project requests outside a pu project say how to fix it", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const dir = makeTempHome();
    await expect(client.request("status", { projectRoot: dir })).rejects.toMatchObject({
      code: "NOT_INITIALIZED",
      message: `no pu project at ${dir}; run \`pu init\``,
    });
  });
});
