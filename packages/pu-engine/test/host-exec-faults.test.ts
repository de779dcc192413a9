// A host reached through the exec transport on this machine: a second pu daemon with a PU_HOME of
// its own (the host's ROOT/home), reached by `pu daemon stdio` through a wrapper script that the
// test can make fail (the link "drops"). What a person notices when the link or a state file of
// the control plane goes wrong: agents placed there still listed, problems said in one line.
import { readdirSync, readFileSync, writeFileSync, mkdirSync, chmodSync, rmSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { cleanupAll, makeProject, makeTempHome, startTestDaemon, trackAgentPid, waitFor, type TestDaemon } from "./helpers/daemon.js";

afterEach(cleanupAll);

const here = path.dirname(fileURLToPath(import.meta.url));
const PU_CLI_BIN = path.resolve(here, "../../pu-cli/bin/pu");

interface ExecHost {
  name: string;
  root: string;
  daemon: TestDaemon;
  /** Makes the transport fail from now on and ends the bridges already open (the link drops). */
  drop(): void;
  restore(): void;
}

/** A host whose daemon runs here under ROOT/home, reached through a wrapper the test can make fail. */
async function execHost(client: Client, name: string): Promise<ExecHost> {
  const root = makeTempHome();
  mkdirSync(path.join(root, "bin"), { recursive: true });
  mkdirSync(path.join(root, "home"), { recursive: true });
  writeFileSync(path.join(root, "bin", "pu"), `#!/bin/sh\nexec "${process.execPath}" "${PU_CLI_BIN}" "$@"\n`);
  chmodSync(path.join(root, "bin", "pu"), 0o755);
  const down = path.join(root, "link-down");
  const wrapper = path.join(root, "transport");
  writeFileSync(wrapper, `#!/bin/sh\nif [ -e "${down}" ]; then echo "link down (test)" >&2; exit 255; fi\nexec "$@"\n`);
  chmodSync(wrapper, 0o755);
  // Started by the test (so stopped by it); the bridge finds it running.
  const daemon = await startTestDaemon(path.join(root, "home"));
  await client.request("host_add", { name, transport: { kind: "exec", command: [wrapper] }, root });
  return {
    name,
    root,
    daemon,
    drop() {
      writeFileSync(down, "");
      for (const pid of bridgePids(root)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
    restore() {
      rmSync(down, { force: true });
    },
  };
}

/** The `pu daemon stdio` bridges of this host (found by its PU_HOME, ROOT/home, in their environment). */
function bridgePids(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (argv.includes("stdio") && env.includes(`PU_HOME=${path.join(root, "home")}`)) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function everyAgent(report: StatusReport): Record<string, AgentView> {
  const out: Record<string, AgentView> = { ...report.agents };
  for (const wt of Object.values(report.worktrees)) Object.assign(out, wt.agents);
  return out;
}

describe("agents on an exec host while its link is down", () => {
  it("an agent placed there and never asked about since is listed as last known (host unreachable)", async () => {
    const control = await startTestDaemon();
    const client = await control.client();
    const repo = await makeProject(client);
    const host = await execHost(client, "box2");
    const first = await client.request("spawn", { projectRoot: repo.root, on: "box2", agent: "terminal", prompt: "echo b1" });
    trackAgentPid(first.agent.pid);
    // One report heard, then a second agent placed after it.
    expect(everyAgent(await client.request("status", { projectRoot: repo.root }))[first.agentId]).toBeDefined();
    const second = await client.request("spawn", { projectRoot: repo.root, on: "box2", agent: "terminal", prompt: "echo b2" });
    trackAgentPid(second.agent.pid);

    host.drop();
    const report = await client.request("status", { projectRoot: repo.root });
    const agents = everyAgent(report);
    for (const id of [first.agentId, second.agentId]) {
      expect(agents[id], `${id} listed`).toMatchObject({ host: "box2", hostState: "unreachable" });
      expect(agents[id]!.status).not.toBe("broken");
    }
    expect(agents[second.agentId]).toMatchObject({ agentType: "terminal", status: "streaming" });
  }, 60_000);
});
