// A manifest directory that cannot be written (read-only, or full): requests that
// must change the manifest fail with IO_ERROR naming the file, the manifest on disk
// stays exactly as it was, and no half-started agent is left running.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isPuError, type PuError } from "@pu/core/errors";
import type { Client } from "@pu/ipc/client";
import { cleanupAll, makeProject, startTestDaemon, trackAgentPid, waitFor, type TestDaemon } from "./helpers/daemon.js";
import { fillUp, mountReadOnly, mountTmpfsOver, mountUnavailableReason, unmountAll } from "./helpers/fault-mounts.js";
import { agentProcessesOfHome } from "./helpers/fault-procs.js";
import type { TempRepo } from "./helpers/git-repo.js";

let unavailable: string | null = null;
beforeAll(() => {
  unavailable = mountUnavailableReason();
  if (unavailable) console.log(`[fault-disk] skipping: ${unavailable}`);
});

afterEach(async () => {
  // Before the temp dirs go: removing them through a read-only mount would fail.
  unmountAll();
  await cleanupAll();
});

async function failure(promise: Promise<unknown>): Promise<PuError> {
  try {
    await promise;
  } catch (err) {
    if (isPuError(err)) return err;
    throw err;
  }
  throw new Error(`the request succeeded but should have failed: ${JSON.stringify(await promise).slice(0, 300)}`);
}

interface Setup {
  daemon: TestDaemon;
  client: Client;
  repo: TempRepo;
  manifestFile: string;
  agentId: string;
  agentPid: number;
  /** A second running agent, for `pu bench`. */
  benchedId: string;
  /** An agent suspended before the disk went bad, for `pu play`. */
  suspendedId: string;
}

/** A project with one running root agent, before anything goes wrong with the disk. */
async function setUp(): Promise<Setup> {
  const daemon = await startTestDaemon();
  const client = await daemon.client();
  const repo = await makeProject(client);
  const agent = await client.request("spawn", { projectRoot: repo.root, root: true, name: "survivor", command: "sleep 60" });
  trackAgentPid(agent.agent.pid);
  const benched = await client.request("spawn", { projectRoot: repo.root, root: true, name: "benched", command: "sleep 60" });
  trackAgentPid(benched.agent.pid);
  const resumable = await client.request("spawn", { projectRoot: repo.root, root: true, name: "resumable", command: "sleep 60" });
  trackAgentPid(resumable.agent.pid);
  await client.request("suspend", { projectRoot: repo.root, target: resumable.agentId });
  return {
    suspendedId: resumable.agentId,
    benchedId: benched.agentId,
    daemon,
    client,
    repo,
    manifestFile: path.join(repo.root, ".pu", "manifest.json"),
    agentId: agent.agentId,
    agentPid: agent.agent.pid ?? -1,
  };
}

/** The writes that must fail, and what must hold afterwards. */
async function expectWritesRefused(s: Setup): Promise<void> {
  const before = readFileSync(s.manifestFile);

  const rename = await failure(s.client.request("rename", { projectRoot: s.repo.root, target: s.agentId, name: "renamed" }));
  expect(rename.code).toBe("IO_ERROR");
  expect(rename.message).toContain(s.manifestFile);

  const spawn = await failure(s.client.request("spawn", { projectRoot: s.repo.root, root: true, command: "sleep 60" }));
  expect(spawn.code).toBe("IO_ERROR");
  expect(spawn.message).toContain(s.manifestFile);

  const suspend = await failure(s.client.request("suspend", { projectRoot: s.repo.root, target: s.benchedId }));
  expect(suspend.code).toBe("IO_ERROR");
  expect(suspend.message).toContain(s.manifestFile);

  // The resumed process cannot be recorded: it is stopped again rather than left running unseen.
  const resume = await failure(s.client.request("resume", { projectRoot: s.repo.root, agentId: s.suspendedId }));
  expect(resume.code).toBe("IO_ERROR");
  expect(resume.message).toContain(s.manifestFile);

  const kill = await failure(s.client.request("kill", { projectRoot: s.repo.root, target: s.agentId }));
  expect(kill.code).toBe("IO_ERROR");
  expect(kill.message).toContain(s.manifestFile);

  expect(readFileSync(s.manifestFile).equals(before), "the manifest changed on disk").toBe(true);
  // The spawn that could not be recorded was stopped, and so was the killed agent.
  await waitFor("no agent process left running", () => agentProcessesOfHome(s.daemon.home).length === 0, 15_000);
  // The daemon carries on: reads still work.
  const status = await s.client.request("status", { projectRoot: s.repo.root });
  expect(status.agents[s.agentId]?.status).toBe("broken");
}

describe("manifest directory faults", () => {
  it("read-only .pu: writes fail with IO_ERROR naming the manifest, which stays intact", async (ctx) => {
    if (unavailable) ctx.skip();
    const s = await setUp();
    mountReadOnly(path.join(s.repo.root, ".pu"));
    await expectWritesRefused(s);
  });

  it("full disk under .pu: writes fail with IO_ERROR naming the manifest, which stays intact", async (ctx) => {
    if (unavailable) ctx.skip();
    const s = await setUp();
    const puDir = path.join(s.repo.root, ".pu");
    mountTmpfsOver(puDir, 256 * 1024);
    fillUp(puDir);
    await expectWritesRefused(s);
  });
  it("an exit that could not be written reads broken from the process, and reaches the manifest once the disk is writable again", async (ctx) => {
    if (unavailable) ctx.skip();
    const s = await setUp();
    mountReadOnly(path.join(s.repo.root, ".pu"));
    expect((await failure(s.client.request("kill", { projectRoot: s.repo.root, target: s.agentId }))).code).toBe("IO_ERROR");
    // Asked again, it says the agent already exited; neither request makes it look alive.
    const again = await s.client.request("kill", { projectRoot: s.repo.root, target: s.agentId });
    expect(again.skipped).toEqual([{ agentId: s.agentId, reason: expect.stringContaining("already exited") }]);
    const status = await s.client.request("status", { projectRoot: s.repo.root });
    expect(status.agents[s.agentId]).toMatchObject({ status: "broken", storedStatus: "streaming", live: false, exitCode: expect.any(Number) });

    unmountAll();
    await waitFor(
      "the exit to be written on a retry",
      () => {
        const entry = (JSON.parse(readFileSync(s.manifestFile, "utf8")) as { agents: Record<string, { status: string; exitCode?: number }> }).agents[s.agentId];
        return entry?.status === "broken" && typeof entry.exitCode === "number";
      },
      20_000,
    );
  });
});
