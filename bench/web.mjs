// `pu web` in the distribution's Chromium (playwright-core, no browser download), each figure
// beside a reference measured in the same run:
//   load       — a fresh login link to all 100 agents listed on the page; reference: `pu status`
//                (the whole CLI process) for the same 100 agents
//   keystroke  — one key into the page's terminal (xterm's input event) → its echo drawn in the
//                page's terminal rows (`stty raw -echo; exec cat`); reference: the same key into
//                `pu attach` running in a PTY this process holds → its echo on that PTY
//   throughput — `cat` of a 50 MB file into the page's terminal until every byte is drawn or
//                skipped by the daemon's slow-viewer rule; reference: `pu logs --follow` to a pipe
//   idle       — the server's CPU over 10 s and its RSS with a page open on 100 idle agents;
//                reference: the daemon's, over the same 10 s
import { spawn, spawnSync } from "node:child_process";
import { existsSync, openSync, closeSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import {
  CLI_BIN,
  REPO,
  cpuSeconds,
  disown,
  figure,
  isAlive,
  killOwned,
  loadPty,
  own,
  percentile,
  rssBytes,
  sleep,
  spawnAgent,
  startDaemon,
  summarize,
  tempWorkspace,
} from "./lib.mjs";

const CHROMIUM = [process.env.PU_TEST_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => p && existsSync(p));
const AGENTS = 100;
const FLOOD_BYTES = 50_000_000;
const ECHO_SCRIPT = "stty raw -echo; exec cat";
const KEYS = "abcdefghijklmnopqrstuvwxyz";

function pu(ws, args) {
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], { cwd: ws.project, env: ws.env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`pu ${args.join(" ")} exited with ${r.status}: ${r.stderr.slice(0, 500)}`);
  return r.stdout;
}

/** A fresh one-time login link from `pu web` (starting the server the first time). */
function loginLink(ws) {
  const started = JSON.parse(pu(ws, ["web", "--no-open", "--json"]));
  own(started.pid);
  return started;
}

function writeFlood(file) {
  const line = `${"w".repeat(99)}\n`;
  const chunk = line.repeat(10_000);
  const fd = openSync(file, "w");
  let written = 0;
  try {
    while (written < FLOOD_BYTES) written += writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
  return written;
}

/** Opens the agent's terminal in the page; resolves once it is attached. */
async function openTerminal(page, origin, agentId) {
  await page.goto(`${origin}/#/agent/${agentId}`);
  await page.locator(`[data-terminal-for="${agentId}"][data-attached="true"]`).waitFor({ timeout: 30_000 });
}

/** In the page: each key sent through xterm's input event, timed until the rows show it. */
function pageEchoTimes(page, agentId, keys) {
  return page.evaluate(
    async ({ agentId, keys }) => {
      const host = document.querySelector(`[data-terminal-for="${agentId}"]`);
      const rows = host.querySelector(".xterm-rows");
      const input = host.querySelector("textarea");
      input.focus();
      const times = [];
      let typed = "";
      for (const key of keys) {
        typed += key;
        const want = typed;
        const shown = new Promise((resolve) => {
          const check = () => rows.textContent.replace(/\s/g, "").includes(want);
          const observer = new MutationObserver(() => {
            if (check()) {
              observer.disconnect();
              resolve();
            }
          });
          observer.observe(rows, { childList: true, subtree: true, characterData: true });
        });
        const start = performance.now();
        input.dispatchEvent(new InputEvent("input", { data: key, inputType: "insertText", bubbles: true }));
        await shown;
        times.push(performance.now() - start);
      }
      return times;
    },
    { agentId, keys },
  );
}

/** The same keys into `pu attach` in a PTY this process holds; each timed until its echo. */
async function attachEchoTimes(ws, agentId, keys) {
  const pty = loadPty();
  const term = pty.spawn(process.execPath, [CLI_BIN, "attach", agentId], { name: "xterm-256color", cols: 120, rows: 40, cwd: ws.project, env: ws.env });
  own(term.pid);
  try {
    let seen = "";
    let waiting;
    term.onData((data) => {
      seen += data;
      if (waiting && seen.includes(waiting.want)) {
        const w = waiting;
        waiting = undefined;
        w.resolve();
      }
    });
    // `pu attach` has drawn the agent's screen once this quiet period is over.
    await sleep(1500);
    const times = [];
    for (const key of keys) {
      seen = "";
      const shown = new Promise((resolve) => (waiting = { want: key, resolve }));
      const start = performance.now();
      term.write(key);
      await shown;
      times.push(performance.now() - start);
    }
    return times;
  } finally {
    term.write("\x1c");
    await sleep(200);
    if (isAlive(term.pid)) await killOwned(term.pid);
    disown(term.pid);
  }
}

function followBytes(ws, agentId, start) {
  const cli = spawn(process.execPath, [CLI_BIN, "logs", agentId, "--follow"], { cwd: ws.project, env: ws.env, stdio: ["ignore", "pipe", "pipe"] });
  own(cli.pid);
  let bytes = 0;
  let last = 0;
  cli.stdout.on("data", (chunk) => {
    bytes += chunk.length;
    last = performance.now();
  });
  const exited = new Promise((resolve) => cli.once("exit", resolve));
  return {
    cli,
    async done() {
      const code = await exited;
      disown(cli.pid);
      if (code !== 0) throw new Error(`pu logs --follow exited ${code}`);
      return { bytes, seconds: (last - start()) / 1000 };
    },
  };
}

export async function run({ loadRuns = 5, keyRuns = 3, keys = 200, floodRuns = 3 } = {}) {
  if (!CHROMIUM) throw new Error("no Chromium on this machine (apt-get install chromium, or set PU_TEST_CHROMIUM)");
  const { chromium } = createRequire(path.join(REPO, "tests/package.json"))("playwright-core");
  const ws = await tempWorkspace("web");
  let daemon;
  let browser;
  let webPid;
  try {
    daemon = await startDaemon(ws.home);
    await daemon.client.request("init", { projectRoot: ws.project });
    const first = loginLink(ws);
    webPid = first.pid;
    const origin = new URL(first.url).origin;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });

    // ---- load: 100 agents listed ----
    for (let i = 0; i < AGENTS; i++) await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: "sleep 3600", name: `idle-${i}` });
    const loads = [];
    const statusRuns = [];
    for (let r = 0; r < loadRuns; r++) {
      const { url } = loginLink(ws);
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const start = performance.now();
      await page.goto(url);
      await page.waitForFunction((n) => document.querySelectorAll("[data-agent-id]").length >= n, AGENTS, { polling: "raf", timeout: 60_000 });
      loads.push(performance.now() - start);
      await context.close();
      const s = performance.now();
      const listed = JSON.parse(pu(ws, ["status", "--json"]));
      statusRuns.push(performance.now() - s);
      if (Object.keys(listed.agents).length < AGENTS) throw new Error("pu status listed fewer agents than spawned");
    }

    // ---- idle: the server and the daemon over 10 s, a page open on the 100 agents ----
    const idleContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const idlePage = await idleContext.newPage();
    await idlePage.goto(loginLink(ws).url);
    await idlePage.waitForFunction((n) => document.querySelectorAll("[data-agent-id]").length >= n, AGENTS, { timeout: 60_000 });
    await sleep(2000);
    const webCpu0 = cpuSeconds(webPid);
    const daemonCpu0 = cpuSeconds(daemon.pid);
    await sleep(10_000);
    const webIdleCpu = ((cpuSeconds(webPid) - webCpu0) / 10) * 100;
    const daemonIdleCpu = ((cpuSeconds(daemon.pid) - daemonCpu0) / 10) * 100;
    const webRss = rssBytes(webPid) / 2 ** 20;
    const daemonRss = rssBytes(daemon.pid) / 2 ** 20;
    await idleContext.close();
    await daemon.client.request("kill", { projectRoot: ws.project, target: "all" });

    // ---- keystroke: page vs pu attach ----
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(loginLink(ws).url);
    await page.locator('#connection[data-connected="true"]').waitFor();
    const p50 = { web: [], attach: [] };
    const p99 = { web: [], attach: [] };
    const sequence = Array.from({ length: keys }, (_, i) => KEYS[i % KEYS.length]);
    for (let r = 0; r < keyRuns; r++) {
      const webAgent = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: ECHO_SCRIPT, name: `keys-web-${r}` });
      await openTerminal(page, origin, webAgent.agentId);
      await sleep(500);
      const w = (await pageEchoTimes(page, webAgent.agentId, sequence)).sort((a, b) => a - b);
      await page.goto(`${origin}/#/`);
      const attachAgent = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: ECHO_SCRIPT, name: `keys-attach-${r}` });
      await sleep(500);
      const a = (await attachEchoTimes(ws, attachAgent.agentId, sequence)).sort((x, y) => x - y);
      for (const id of [webAgent.agentId, attachAgent.agentId]) await daemon.client.request("kill", { projectRoot: ws.project, target: id });
      p50.web.push(percentile(w, 0.5));
      p99.web.push(percentile(w, 0.99));
      p50.attach.push(percentile(a, 0.5));
      p99.attach.push(percentile(a, 0.99));
    }

    // ---- throughput: the page's terminal vs pu logs --follow ----
    const file = path.join(ws.dir, "flood.txt");
    const fileBytes = writeFlood(file);
    const script = `read x; exec cat ${file}`;
    const webRates = [];
    const followRates = [];
    const skippedPerRun = [];
    for (let r = 0; r < floodRuns; r++) {
      const agent = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: script, name: `flood-web-${r}` });
      await openTerminal(page, origin, agent.agentId);
      await sleep(500);
      const host = `[data-terminal-for="${agent.agentId}"]`;
      const before = await page.evaluate((sel) => Number(document.querySelector(sel).getAttribute("data-bytes")), host);
      const start = performance.now();
      await daemon.client.request("input", { agentId: agent.agentId, data: Buffer.from("\n") });
      // Every byte of the file drawn or skipped (the PTY adds a \r per line: count past the file's size).
      await page.waitForFunction(
        ({ sel, want }) => {
          const el = document.querySelector(sel);
          return Number(el.getAttribute("data-bytes")) + Number(el.getAttribute("data-skipped")) >= want;
        },
        { sel: host, want: before + fileBytes },
        { polling: "raf", timeout: 300_000 },
      );
      const seconds = (performance.now() - start) / 1000;
      webRates.push(fileBytes / seconds / 1e6);
      skippedPerRun.push(await page.evaluate((sel) => Number(document.querySelector(sel).getAttribute("data-skipped")), host));
      await page.goto(`${origin}/#/`);

      const followed = await spawnAgent(daemon.client, { projectRoot: ws.project, root: true, command: script, name: `flood-cli-${r}` });
      let followStart = 0;
      const follower = followBytes(ws, followed.agentId, () => followStart);
      await sleep(900);
      followStart = performance.now();
      await daemon.client.request("input", { agentId: followed.agentId, data: Buffer.from("\n") });
      const f = await follower.done();
      followRates.push(fileBytes / f.seconds / 1e6);
      for (const id of [agent.agentId, followed.agentId]) await daemon.client.request("kill", { projectRoot: ws.project, target: id }).catch(() => undefined);
    }
    await context.close();

    const load = summarize(loads);
    const status = summarize(statusRuns);
    const rows = [
      figure({
        id: "web.load_100_agents",
        name: `pu web: a login link → all ${AGENTS} agents listed in the page (Chromium)`,
        unit: "ms",
        value: load,
        reference: { name: `\`pu status --json\` (the whole CLI process), same ${AGENTS} agents`, unit: "ms", ...status },
        ratio: load.median / status.median,
        notes: `${loadRuns} runs, each a new browser context (login, cookie, page, status socket, first draw)`,
      }),
    ];
    for (const [q, label] of [
      [p50, "p50"],
      [p99, "p99"],
    ]) {
      const web = summarize(q.web);
      const attach = summarize(q.attach);
      rows.push(
        figure({
          id: `web.keystroke.${label}`,
          name: `pu web: keystroke ${label} (xterm input in the page → echo drawn in its rows)`,
          unit: "ms",
          value: web,
          reference: { name: "`pu attach` in a PTY: key written → echo read", unit: "ms", ...attach },
          ratio: web.median / attach.median,
          notes: `${keyRuns} runs × ${keys} keys into \`${ECHO_SCRIPT}\`; the page draws once per animation frame (60 Hz in headless Chromium)`,
        }),
      );
    }
    const web = summarize(webRates);
    const follow = summarize(followRates);
    rows.push(
      figure({
        id: "web.throughput",
        name: `pu web: cat of ${Math.round(fileBytes / 1e6)} MB (100-byte lines) into the page's terminal, drawn or skipped`,
        unit: "MB/s",
        value: web,
        reference: { name: "`pu logs --follow` to a pipe, same file", unit: "MB/s", ...follow },
        ratio: web.median / follow.median,
        notes: `bytes the daemon skipped for the page (slow viewer) per run: ${skippedPerRun.join("/")}`,
      }),
      figure({
        id: "web.idle_cpu",
        name: `pu web server idle CPU, a page open on ${AGENTS} idle agents (10 s)`,
        unit: "%",
        value: summarize([webIdleCpu]),
        reference: { name: "the daemon, same 10 s", unit: "%", ...summarize([daemonIdleCpu]) },
        ratio: daemonIdleCpu > 0 ? webIdleCpu / daemonIdleCpu : null,
      }),
      figure({
        id: "web.rss",
        name: `pu web server RSS, a page open on ${AGENTS} agents`,
        unit: "MiB",
        value: summarize([webRss]),
        reference: { name: `the daemon with the same ${AGENTS} agents`, unit: "MiB", ...summarize([daemonRss]) },
        ratio: webRss / daemonRss,
      }),
    );
    return rows;
  } finally {
    await browser?.close().catch(() => undefined);
    if (webPid && isAlive(webPid)) await killOwned(webPid);
    await daemon?.stop();
    await ws.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ loadRuns: Number(process.env.RUNS ?? 5) });
  for (const r of rows) console.log(r.id, r.value.median.toFixed(2), r.reference.median.toFixed(2), r.ratio?.toFixed(2), r.notes ?? "");
}
