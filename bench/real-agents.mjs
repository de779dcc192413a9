// Figures: how fast pu reads a real agent CLI's turn as over. Claude Code, Codex and
// OpenCode (the versions tests/package.json pins) run under a daemon against the test model
// server (tests/model-server, bundled here with esbuild). The first turn is the spawn prompt
// in a new worktree, as `pu spawn "…"` gives it: the model thinks, makes one shell tool
// call, then streams a short answer slowly. The later turns are `THINK: <ms> SAY: <text>`
// typed in as `pu send` does; they are the reference for the first. Per turn: the time from
// the model server's last byte of the final answer to the status stream's `waiting` for
// that agent, and every `status` sample taken while the model was thinking or streaming
// (all must read `streaming`).
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { REPO, figure, killOwned, isAlive, sleep, spawnAgent, startDaemon, summarize, tempWorkspace } from "./lib.mjs";

const AGENTS = ["claude", "codex", "opencode"];
const THINK_MS = 2500;
const TURN_TIMEOUT_MS = 120_000;
const TARGET_SECONDS = 3;
// The first turn is the most common one: it must be read as over as soon as the others.
const FIRST_TURN_TARGET_SECONDS = 1;

/** The model server and the agent homes are TypeScript (the tests' own); bundled once per run. */
async function loadTestKit() {
  const esbuild = createRequire(path.join(REPO, "packages/pu-cli/package.json"))("esbuild");
  const dir = path.join(REPO, "tests/real-agents");
  // Next to homes.ts, so its path to tests/node_modules/.bin (the pinned CLIs) still holds.
  const outfile = path.join(dir, ".bench-kit.mjs");
  await esbuild.build({
    stdin: { contents: 'export { startModelServer } from "../model-server/server.ts";\nexport { agentHome } from "./homes.ts";\n', resolveDir: dir, loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    outfile,
    logLevel: "error",
  });
  return import(`${pathToFileURL(outfile).href}?t=${Date.now()}`);
}

/** Status changes of one project as they arrive, with the time each arrived. */
async function watchStatus(client, projectRoot) {
  const changes = [];
  const stream = await client.openStream("subscribe_status", { projectRoot });
  void (async () => {
    try {
      for await (const event of stream) {
        if (event.type !== "status_event") continue;
        const at = Date.now();
        for (const c of event.changed) changes.push({ ...c, at });
      }
    } catch {
      // the daemon stopped
    }
  })();
  return changes;
}

async function waitUntil(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function oneAgent(kit, agent, turns) {
  const ws = await tempWorkspace(`real-${agent}`);
  const server = await kit.startModelServer({});
  let daemon;
  let pid;
  try {
    const homeDir = path.join(ws.home, "agent-home");
    mkdirSync(homeDir, { recursive: true });
    const home = kit.agentHome(agent, { dir: homeDir, serverUrl: server.url, trustedDirs: [ws.project] });
    const env = { ...process.env, SHELL: "/bin/bash" };
    for (const [key, value] of Object.entries(home.env)) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
    daemon = await startDaemon(ws.home, env);
    const { client } = daemon;
    await client.request("init", { projectRoot: ws.project });
    const changes = await watchStatus(client, ws.project);

    const latencies = [];
    let waitingWhileBusy = 0;
    let samples = 0;
    const reasons = [];
    let agentId;
    for (let turn = 1; turn <= turns; turn++) {
      const text = `bench answer ${turn}`;
      const prompt = turn === 1 ? `THINK: ${THINK_MS} RUN: echo made > bench-made.txt PACE: 250 SAY: ${text} comes in slowly` : `THINK: ${THINK_MS} SAY: ${text}`;
      const said = turn === 1 ? `${text} comes in slowly` : text;
      const before = server.requests.length;
      if (turn === 1) {
        const spawned = await spawnAgent(client, { projectRoot: ws.project, agent, prompt, name: `bench-${agent}` });
        agentId = spawned.agent.id;
        pid = spawned.agent.pid;
      } else {
        await client.request("type_text", { agentId, text: prompt, submit: true });
      }
      const request = await server.waitForRequest((r) => r.seq > before && r.reply === "text" && r.replyText === said, TURN_TIMEOUT_MS);
      // Sampled back to back for as long as the answer is in flight.
      while (request.finishedAt === undefined) {
        const report = await client.request("status", { projectRoot: ws.project, agentId });
        const view = report.agents[agentId];
        samples++;
        if (view?.status === "waiting") waitingWhileBusy++;
      }
      const finishedAt = request.finishedAt;
      const waiting = await waitUntil(
        `${agent} to read waiting after turn ${turn}`,
        () => changes.find((c) => c.agentId === agentId && c.to === "waiting" && c.at >= finishedAt),
        TURN_TIMEOUT_MS,
      );
      latencies.push((waiting.at - finishedAt) / 1000);
      const view = (await client.request("status", { projectRoot: ws.project, agentId })).agents[agentId];
      reasons.push(view?.waitingReason ?? "-");
      // The next turn starts from a settled screen, as a person's would.
      await sleep(500);
    }
    await client.request("kill", { projectRoot: ws.project, target: "all" }, { timeoutMs: 60_000 });
    return { latencies, waitingWhileBusy, samples, reasons };
  } finally {
    await daemon?.stop();
    if (pid && isAlive(pid)) await killOwned(pid);
    await server.close();
    await ws.cleanup();
  }
}

export async function run({ turns = 3 } = {}) {
  const kit = await loadTestKit();
  const figures = [];
  for (const agent of AGENTS) {
    const r = await oneAgent(kit, agent, turns);
    const value = summarize(r.latencies.slice(1));
    const first = r.latencies[0];
    figures.push(
      figure({
        id: `real_agents.${agent}.first_turn_waiting_after_answer`,
        name: `Real ${agent}: spawn prompt (tool call, then a slow answer) finished → status \`waiting\``,
        unit: "s",
        value: summarize([first]),
        target: `≤ ${FIRST_TURN_TARGET_SECONDS} s`,
        met: first <= FIRST_TURN_TARGET_SECONDS,
        reference: { name: "the later turns of the same agent, typed in as `pu send` does", unit: "s", ...value },
        ratio: value.median > 0 ? first / value.median : null,
        notes: `THINK ${THINK_MS} ms, one shell tool call, then a short answer paced 250 ms a word, in a new worktree; waiting reason ${r.reasons[0]}`,
      }),
      figure({
        id: `real_agents.${agent}.waiting_after_answer`,
        name: `Real ${agent}: answer finished streaming → status \`waiting\``,
        unit: "s",
        value,
        target: `≤ ${TARGET_SECONDS} s`,
        met: value.max <= TARGET_SECONDS,
        notes: `${turns - 1} turns typed in after the first, THINK ${THINK_MS} ms + a short answer against the test model server; waiting reasons: ${r.reasons.slice(1).join(", ")}; per turn: ${r.latencies.slice(1).map((s) => s.toFixed(2)).join(" / ")} s`,
      }),
      figure({
        id: `real_agents.${agent}.waiting_while_busy`,
        name: `Real ${agent}: \`waiting\` samples while the model thinks or streams`,
        unit: "samples",
        value: summarize([r.waitingWhileBusy]),
        target: "0",
        met: r.waitingWhileBusy === 0,
        notes: `${r.samples} status samples taken back to back while the answers were in flight`,
      }),
    );
  }
  return figures;
}
