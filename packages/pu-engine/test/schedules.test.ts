// Schedules in a real daemon: a due schedule fires once and its times are written back;
// runs that fell due while no daemon ran are counted, not fired; an untrusted schedule
// neither fires nor has its file written.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { parseDefinition } from "@pu/core/definitions";
import type { Client } from "@pu/ipc/client";
import {
  cleanupAll,
  daemonEnv,
  FAKE_AGENT_COMMAND,
  makeProject,
  readManifest,
  startTestDaemon,
  trackAgentPid,
  trackTempDir,
  trustProject,
  waitFor,
} from "./helpers/daemon.js";
import { makeTempRepo } from "./helpers/git-repo.js";

afterEach(cleanupAll);

const HOUR = 3_600_000;
const PU_CLI_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../pu-cli/bin/pu");
const FAKE_TYPE_CONFIG = `agents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`;

function scheduleFile(root: string, name: string): string {
  return path.join(root, ".pu", "schedules", `${name}.yaml`);
}

function readSchedule(root: string, name: string): Record<string, unknown> {
  const file = scheduleFile(root, name);
  return parseDefinition("schedule", readFileSync(file, "utf8"), file).parsed as Record<string, unknown>;
}

async function details(client: Client, projectRoot: string, name: string): Promise<Record<string, unknown> | undefined> {
  const { definitions } = await client.request("definition_list", { projectRoot, kind: "schedule" });
  return definitions.find((d) => d.name === name)?.details;
}

function rootAgents(root: string) {
  return Object.values(readManifest(root).agents);
}

describe("schedules", () => {
  it("a schedule due in 2 s fires exactly once, then lastRun and nextRun are written back (comments kept)", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, FAKE_TYPE_CONFIG);
    const startAt = new Date(Date.now() + 2000);
    const content = `# my own note, kept
recurrence: hourly
startAt: "${startAt.toISOString()}"
trigger:
  inlinePrompt: "echo scheduled run"
  agent: fake
root: true
`;
    await client.request("definition_save", { projectRoot: repo.root, kind: "schedule", name: "tick", content });

    const agent = await waitFor("the scheduled agent", () => rootAgents(repo.root)[0], 30_000);
    trackAgentPid(agent.pid);
    expect(agent.agentType).toBe("fake");
    expect(agent.prompt).toBe("echo scheduled run");
    await waitFor("lastRun to be written", () => readSchedule(repo.root, "tick").lastRun !== undefined);
    const stored = readSchedule(repo.root, "tick");
    expect(stored.nextRun).toBe(new Date(startAt.getTime() + HOUR).toISOString());
    expect(new Date(String(stored.lastRun)).getTime()).toBeGreaterThanOrEqual(startAt.getTime());
    expect(readFileSync(scheduleFile(repo.root, "tick"), "utf8")).toContain("# my own note, kept");
    expect(await details(client, repo.root, "tick")).toEqual({
      enabled: true,
      recurrence: "hourly",
      nextRun: stored.nextRun,
      lastRun: stored.lastRun,
      missedRuns: 0,
    });

    // Nothing else is due for an hour: the timer must not fire again.
    await sleep(2500);
    expect(rootAgents(repo.root)).toHaveLength(1);

    const disabled = await client.request("schedule_enable", { projectRoot: repo.root, name: "tick", enabled: false });
    expect(disabled).toEqual({ name: "tick", enabled: false, nextRun: null });
    expect(readSchedule(repo.root, "tick").enabled).toBe(false);
    expect(await details(client, repo.root, "tick")).toMatchObject({ enabled: false, nextRun: null });
    await expect(client.request("schedule_enable", { projectRoot: repo.root, name: "other", enabled: true })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });

  it("runs that fell due while the daemon was down are counted as missed, not fired", async () => {
    const first = await startTestDaemon();
    const firstClient = await first.client();
    const repo = await makeProject(firstClient, FAKE_TYPE_CONFIG);
    const now = Date.now();
    const nightly = (nextRun: number) => `recurrence: hourly
startAt: "${new Date(now - 4.5 * HOUR).toISOString()}"
nextRun: "${new Date(nextRun).toISOString()}"
trigger:
  inlinePrompt: "echo should not run"
  agent: fake
root: true
`;
    // Written by hand and trusted (`pu trust`); its times are not part of what is trusted.
    mkdirSync(path.dirname(scheduleFile(repo.root, "nightly")), { recursive: true });
    writeFileSync(scheduleFile(repo.root, "nightly"), nightly(now + 10 * HOUR));
    await trustProject(firstClient, repo.root);
    await first.stop();

    writeFileSync(scheduleFile(repo.root, "nightly"), nightly(now - 2.5 * HOUR));

    const second = await startTestDaemon(first.home);
    const client = await second.client();
    // Due at now-2.5h, now-1.5h and now-0.5h: three missed runs.
    const seen = await waitFor("the missed runs to be recorded", async () => {
      const d = await details(client, repo.root, "nightly");
      return d?.missedRuns === 3 ? d : undefined;
    });
    const nextRun = new Date(String(readSchedule(repo.root, "nightly").nextRun)).getTime();
    expect(nextRun).toBeGreaterThan(Date.now());
    expect(nextRun).toBe(now - 4.5 * HOUR + 5 * HOUR);
    expect(seen).toMatchObject({ enabled: true, lastRun: null, nextRun: new Date(nextRun).toISOString() });
    expect(readSchedule(repo.root, "nightly").lastRun).toBeUndefined();
    expect(rootAgents(repo.root)).toEqual([]);
    const state = JSON.parse(readFileSync(path.join(repo.root, ".pu", "schedule-state.json"), "utf8")) as {
      schedules: Record<string, { missedRuns: number }>;
    };
    expect(state.schedules.nightly?.missedRuns).toBe(3);
  });

  it("writing nextRun and enabled keeps the user's comments, blank lines and flow-style fields", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, FAKE_TYPE_CONFIG);
    const content = `# morning digest, owned by the docs team
recurrence: daily   # 09:00 every day
startAt: "2030-01-07T09:00:00Z"
enabled: true # turn off with pu schedule disable

trigger: { inlinePrompt: "summarise yesterday", agent: fake }  # one line on purpose
vars:
  # the channel the digest goes to
  channel: docs
root: true
`;
    await client.request("definition_save", { projectRoot: repo.root, kind: "schedule", name: "digest", content });
    await waitFor("nextRun to be written", () => readSchedule(repo.root, "digest").nextRun !== undefined);
    await client.request("schedule_enable", { projectRoot: repo.root, name: "digest", enabled: false });

    const text = readFileSync(scheduleFile(repo.root, "digest"), "utf8");
    expect(text).toContain("# morning digest, owned by the docs team\n");
    // yaml keeps each comment on its line (the gap before it becomes one space).
    expect(text).toMatch(/^recurrence: daily +# 09:00 every day$/m);
    expect(text).toContain("enabled: false # turn off with pu schedule disable\n\n");
    expect(text).toMatch(/^trigger: \{ inlinePrompt: "summarise yesterday", agent: fake \} +# one line on purpose$/m);
    expect(text).toContain("  # the channel the digest goes to\n  channel: docs\n");
    expect(readSchedule(repo.root, "digest")).toMatchObject({ enabled: false, nextRun: "2030-01-07T09:00:00.000Z" });
  });
  it("pu schedule list shows an untrusted schedule as held until pu trust, with the daemon's next due time, not the file's stale nextRun", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    // A repository that carries its own schedule, committed with a nextRun long past.
    const repo = makeTempRepo();
    trackTempDir(path.dirname(repo.root));
    const file = scheduleFile(repo.root, "nightly");
    const content = `recurrence: hourly
startAt: "2020-01-01T00:30:00Z"
nextRun: "2021-06-01T00:30:00.000Z"
trigger:
  inlinePrompt: "echo scheduled run"
  agent: fake
root: true
`;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(path.join(repo.root, ".pu", "config.yaml"), FAKE_TYPE_CONFIG);
    writeFileSync(file, content);
    await client.request("init", { projectRoot: repo.root });

    // Next due on the half hour after now, as the daemon keeps it (the file is not written).
    const due = (from: number) => new Date(Date.parse("2020-01-01T00:30:00Z") + (Math.floor((from - Date.parse("2020-01-01T00:30:00Z")) / HOUR) + 1) * HOUR).toISOString();
    const before = Date.now();
    const seen = await details(client, repo.root, "nightly");
    const expected = [due(before), due(Date.now())];
    expect(expected).toContain(seen?.nextRun);
    expect(seen?.untrusted).toMatch(/not trusted yet: .*pu trust/);
    expect(readFileSync(file, "utf8")).toBe(content);
    // The time is the daemon's, not the file's: a hand edit it has not looked at since changes nothing it will do.
    writeFileSync(file, content.replace("2021-06-01T00:30:00.000Z", "2099-01-01T00:30:00.000Z"));
    expect((await details(client, repo.root, "nightly"))?.nextRun).toBe(seen?.nextRun);
    writeFileSync(file, content);

    // Through the real CLI: the NEXT RUN column says it will not run before pu trust, and why below.
    const cli = spawnSync(process.execPath, [PU_CLI_BIN, "schedule", "list"], { cwd: repo.root, env: daemonEnv(daemon.home), encoding: "utf8" });
    expect(cli.status).toBe(0);
    const row = cli.stdout.split("\n").find((l) => l.startsWith("nightly"));
    expect(row).toMatch(/not before `pu trust` \(due 20\d\d-/);
    expect(row).not.toContain("2021-06-01");
    expect(cli.stdout).toMatch(/^held: nightly: not trusted yet: .*pu trust/m);

    // Trusted: it shows its next run as any other, and is no longer marked.
    await trustProject(client, repo.root);
    const trusted = await waitFor("the trusted schedule's nextRun in its file", () => readSchedule(repo.root, "nightly").nextRun !== "2021-06-01T00:30:00.000Z" && readSchedule(repo.root, "nightly").nextRun);
    const after = await details(client, repo.root, "nightly");
    expect(after).not.toHaveProperty("untrusted");
    expect(after?.nextRun).toBe(trusted);
  });
  it("an untrusted schedule never fires and its committed file is never written; after pu trust it fires and its times are written", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    // A repository that carries its own schedule (and agent type), committed by its author.
    const repo = makeTempRepo();
    trackTempDir(path.dirname(repo.root));
    const file = scheduleFile(repo.root, "often");
    const content = `# every two seconds
recurrence: "*/2 * * * * *"
startAt: "2020-01-01T00:00:00Z"
trigger:
  inlinePrompt: "echo scheduled run"
  agent: fake
root: true
`;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(path.join(repo.root, ".pu", "config.yaml"), FAKE_TYPE_CONFIG);
    writeFileSync(file, content);
    repo.git(["add", "-f", ".pu/config.yaml", ".pu/schedules/often.yaml"]);
    repo.git(["commit", "-q", "-m", "the author's pu setup"]);

    await client.request("init", { projectRoot: repo.root });
    // It falls due every 2 s: held (counted, with the reason), not fired, and its file left as committed.
    const held = await waitFor("the schedule to hold two runs", async () => {
      const d = await details(client, repo.root, "often");
      return typeof d?.heldRuns === "number" && d.heldRuns >= 2 ? d : undefined;
    }, 30_000);
    expect(String(held.heldReason)).toContain("pu trust");
    expect(readFileSync(file, "utf8")).toBe(content);
    expect(repo.git(["status", "--porcelain", "--", ".pu/schedules"])).toBe("");
    expect(rootAgents(repo.root)).toEqual([]);

    await trustProject(client, repo.root);
    const agent = await waitFor("the scheduled agent", () => rootAgents(repo.root)[0], 30_000);
    trackAgentPid(agent.pid);
    expect(agent.prompt).toBe("echo scheduled run");
    await waitFor("lastRun to be written", () => readSchedule(repo.root, "often").lastRun !== undefined);
    await client.request("schedule_enable", { projectRoot: repo.root, name: "often", enabled: false });
    for (const a of rootAgents(repo.root)) trackAgentPid(a.pid);
    const stored = readSchedule(repo.root, "often");
    expect(typeof stored.nextRun).toBe("string");
    expect(readFileSync(file, "utf8")).toContain("# every two seconds\n");
    // It fired: the runs it held before are no longer reported.
    expect(await details(client, repo.root, "often")).not.toHaveProperty("heldRuns");
  });
});
