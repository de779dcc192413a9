// `pu web` in a real Chromium (playwright-core driving the machine's browser): a person logs in
// with the link `pu web` prints, sees every agent live, types into a terminal, watches a flood
// without the page freezing, merges from the diff view, approves a review on the queue board,
// picks a group's winner, approves a plan from its graph, and is notified when an agent waits.
// Also how a person gets in: through the page `pu web` opens (file:// redirect, then login), in a
// second tab, without a key, and after the server restarted. Every view is photographed at a
// laptop's and a phone's width; the phone's must not scroll sideways.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox, REPO_ROOT } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";
import { chromiumPath, openWeb, readWebFile, startWeb } from "../helpers/web.js";

const GROUP_MEMBER = path.join(REPO_ROOT, "tests/fixtures/group-member.mjs");
const PLAN_ROLE = path.join(REPO_ROOT, "tests/fixtures/plan-role.mjs");
const browserFound = chromiumPath();
// Only a machine without Chromium skips, and says so; CI installs it (scripts/ci-packages.sh).
if (browserFound.missing && process.env.CI) throw new Error(browserFound.missing);
if (browserFound.missing) console.warn(`web-browser.test.ts skipped: ${browserFound.missing}`);

/** The text xterm shows for a terminal (its rows, as a person reads them). */
const terminalText = (page: Page, agentId: string) => page.locator(`[data-terminal-for="${agentId}"] .xterm-rows`).innerText();

describe.skipIf(!browserFound.path)("pu web in Chromium", { timeout: 300_000 }, () => {
  let sb: PuSandbox;
  let browser: Browser;
  let shots: string;
  let page: Page;
  const contexts: BrowserContext[] = [];

  /** A fresh browser context logged in with a fresh `pu web` link (what a second person does). */
  async function loggedInPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    const context = await browser.newContext({ viewport });
    contexts.push(context);
    const opened = await context.newPage();
    const { url } = await startWeb(sb);
    await opened.goto(url);
    await opened.locator('#connection[data-connected="true"]').waitFor();
    return opened;
  }
  const row = (p: Page, agentId: string) => p.locator(`[data-agent-id="${agentId}"]`);
  const confirm = (p: Page) => p.locator('dialog[open] [data-action="confirm"]').click();

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-web-browser-");
    await sb.ok(["init"]);
    const config = path.join(sb.root, ".pu/config.yaml");
    writeFileSync(
      config,
      `${readFileSync(config, "utf8").replace(/^defaultAgent:.*$/m, "defaultAgent: fake")}\nagents:\n` +
        `  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n` +
        `  alpha:\n    command: ${process.execPath} ${GROUP_MEMBER}\n  beta:\n    command: ${process.execPath} ${GROUP_MEMBER}\n` +
        `  planbot:\n    command: ${process.execPath} ${PLAN_ROLE}\n` +
        "plan:\n  agents: { explorer: planbot, planner: planbot, worker: planbot, verifier: planbot }\n",
    );
    mkdirSync(path.join(sb.root, ".pu/workflows"), { recursive: true });
    writeFileSync(path.join(sb.root, ".pu/workflows/REV.yaml"), 'steps:\n  - name: plan\n    prompt: "echo planned {{TITLE}}"\n    review: plan\n');
    await sb.ok(["trust"]);
    writeFileSync(path.join(sb.home, "config.yaml"), "queue:\n  maxParallel: 4\n");
    const groupScenario = path.join(sb.base, "group.json");
    writeFileSync(groupScenario, JSON.stringify({ members: { alpha: { lines: 3 }, beta: { lines: 1 } } }));
    const task = (id: string, blockedBy: string[] = []) => ({ id, subject: `make ${id}.txt`, description: `write ${id}.txt`, blockedBy, criteria: [`${id}.txt exists`] });
    const planScenario = path.join(sb.base, "plan.json");
    writeFileSync(planScenario, JSON.stringify({ tasks: [task("a"), task("b", ["a"]), task("c", ["a"])] }));
    // The daemon (and every scripted agent it starts) reads the scenarios from its environment.
    await sb.ok(["daemon", "restart"], { env: { GROUP_TEST_SCENARIO: groupScenario, PLAN_TEST_SCENARIO: planScenario } });
    browser = await chromium.launch({ executablePath: browserFound.path, args: ["--no-sandbox"] });
    shots = mkdtempSync(path.join(os.tmpdir(), "pu-web-shots-"));
    page = await loggedInPage();
  });
  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    // PU_WEB_SHOTS keeps copies for a person to look at; these are the test's own.
    if (shots) rmSync(shots, { recursive: true, force: true });
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  /** Both widths of the current view; at a phone's width the page must not scroll sideways. */
  async function photograph(name: string): Promise<void> {
    for (const [width, label] of [[1280, "wide"], [400, "narrow"]] as const) {
      await page.setViewportSize({ width, height: 800 });
      // Views redraw on resize (the terminal refits after a short pause): wait for what a person would see.
      if (width === 400) await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth), { message: `${name} scrolls sideways on a phone` }).toBeLessThanOrEqual(400);
      const file = path.join(shots, `${name}-${label}.png`);
      await page.screenshot({ path: file, fullPage: true });
      expect(statSync(file).size).toBeGreaterThan(5_000);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    if (process.env.PU_WEB_SHOTS) {
      mkdirSync(process.env.PU_WEB_SHOTS, { recursive: true });
      for (const label of ["wide", "narrow"]) writeFileSync(path.join(process.env.PU_WEB_SHOTS, `${name}-${label}.png`), readFileSync(path.join(shots, `${name}-${label}.png`)));
    }
  }

  let shell: string;

  it("the agent list is live: a new agent appears, its status changes, and a hostile name is shown as text", async () => {
    const hostile = '<img src=x onerror="window.__owned=1">';
    const spawned = await sb.spawnAgent(["--agent", "terminal", "--root", "--name", hostile]);
    shell = spawned.agentId;
    await row(page, shell).waitFor();
    expect(await row(page, shell).locator(".agent-name a").innerText()).toBe(hostile);
    expect(await page.evaluate(() => (window as unknown as { __owned?: number }).__owned)).toBeUndefined();
    expect(await page.locator('img[src="x"]').count()).toBe(0);

    const doomed = await sb.spawnAgent(["--agent", "terminal", "--root", "--name", "doomed"]);
    await row(page, doomed.agentId).waitFor();
    await sb.ok(["kill", doomed.agentId]);
    // No reload: the status socket redraws the row (or drops it once the agent is gone from the list).
    await waitFor("the killed agent's row to change", async () => {
      const count = await row(page, doomed.agentId).count();
      if (count === 0) return true;
      const label = await row(page, doomed.agentId).locator("[data-status]").getAttribute("data-status");
      return label !== "idle" && label !== "working" && label !== "starting" ? true : undefined;
    });
    await photograph("agents");
  });

  it("what pu could not read (a corrupt hosts.json) shows on its own as a problem line above the project's agents, as text, and goes on its own once fixed", async () => {
    const hostsFile = path.join(sb.home, "hosts.json");
    const problems = page.locator(`[data-project="${sb.root}"] [data-problem]`);
    // The page follows the status already (the file goes bad under it, not before it opens).
    await row(page, shell).waitFor();
    expect(await problems.count()).toBe(0);
    // JSON.parse quotes the start of the file in its message: the problem carries this markup.
    // Nothing else happens (no `pu status`, no agent printing): while the page follows the status,
    // the daemon looks at hosts.json (a stat every ~1.5 s) and pushes the new problem.
    writeFileSync(hostsFile, '<img src=x onerror="window.__problem=1">');
    await problems.first().waitFor({ timeout: 6_000 });
    // Worded as pu status says it.
    const said = (await sb.ok(["status"])).split("\n").find((line) => line.startsWith("problem: ")) ?? "";
    expect(said).toContain(`${hostsFile}: not valid JSON`);
    expect(await problems.allInnerTexts()).toEqual([said]);
    expect(said).toContain("<img");
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __problem?: number }).__problem)).toBeUndefined();
    // Above the project's agents, not instead of them.
    await row(page, shell).waitFor();
    const [problemBox, rowBox] = [await problems.first().boundingBox(), await row(page, shell).boundingBox()];
    expect(problemBox!.y).toBeLessThan(rowBox!.y);
    await photograph("agents-problem");

    // Fixed by the person: the line goes by itself, again with nothing else asking.
    writeFileSync(hostsFile, `${JSON.stringify({ version: 1, hosts: [] })}\n`);
    await expect.poll(() => problems.count(), { timeout: 6_000 }).toBe(0);
    await row(page, shell).waitFor();
    expect(await sb.ok(["status"])).not.toContain("problem:");
  });

  it("`pu web` opening the browser: its file:// redirect page leads to a signed-in page, with no key left in the address bar or on disk", async () => {
    const { openedFile } = await openWeb(sb);
    expect(statSync(openedFile).mode & 0o777).toBe(0o600);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const opened = await context.newPage();
    const statuses: string[] = [];
    opened.on("response", (response) => statuses.push(`${response.status()} ${new URL(response.url()).pathname}`));
    // Exactly what the browser `pu web` starts is given: the file's URL. The chain starts
    // cross-site (file://), so Chromium withholds the SameSite=Strict cookie from the final GET /.
    await opened.goto(`file://${openedFile}`);
    await opened.locator('#connection[data-connected="true"]').waitFor();
    expect(statuses).toEqual(expect.arrayContaining(["303 /login", "200 /"]));
    expect(new URL(opened.url()).hash).toBe("#/");
    expect(await opened.evaluate(() => localStorage.getItem("pu-session-key")?.length)).toBeGreaterThan(20);
    await waitFor("web-open.html to be removed once used", () => !existsSync(openedFile));
    // A second tab of the same browser shares the key (localStorage is per origin).
    const secondTab = await context.newPage();
    await secondTab.goto(`${new URL(opened.url()).origin}/#/queue`);
    await secondTab.locator('#connection[data-connected="true"]').waitFor();
    await secondTab.locator("[data-column]").first().waitFor();
  });

  it("a page opened without its key (a bookmark, another browser) says in one line how to get in, and asks nothing", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const stranger = await context.newPage();
    const apiCalls: string[] = [];
    stranger.on("request", (request) => {
      if (new URL(request.url()).pathname.startsWith("/api/")) apiCalls.push(request.url());
    });
    await stranger.goto(new URL(page.url()).origin + "/");
    const line = stranger.locator("[data-signed-out]");
    await line.waitFor();
    expect(await line.innerText()).toMatch(/open the link `pu web` prints/);
    expect(await stranger.locator("#connection").innerText()).toBe("signed out");
    expect(await stranger.locator("[data-agent-id]").count()).toBe(0);
    expect(apiCalls).toEqual([]);
  });

  it("a terminal takes keys and shows their echo; a second person's read-only page shows the same output", async () => {
    await page.goto(`${new URL(page.url()).origin}/#/agent/${shell}`);
    await page.locator(`[data-terminal-for="${shell}"][data-attached="true"]`).waitFor();
    await page.locator(`[data-terminal-for="${shell}"] .xterm`).click();
    await page.keyboard.type("echo web-$((6*7))\n");
    await waitFor("the shell's answer in the page", async () => ((await terminalText(page, shell)).includes("web-42") ? true : undefined));

    const other = await loggedInPage();
    await other.goto(`${new URL(other.url()).origin}/#/agent/${shell}?ro`);
    const watcher = other.locator(`[data-terminal-for="${shell}"][data-read-only="true"][data-attached="true"]`);
    await watcher.waitFor();
    // Its keys go nowhere; what the first person types shows on both.
    await watcher.locator(".xterm").click();
    await other.keyboard.type("echo from-the-watcher\n");
    await page.locator(`[data-terminal-for="${shell}"] .xterm`).click();
    await page.keyboard.type("echo both-$((2+3))\n");
    await waitFor("the echo on the watcher's page", async () => ((await terminalText(other, shell)).includes("both-5") ? true : undefined));
    expect(await sb.logs(shell)).not.toContain("from-the-watcher");
    await photograph("terminal");
  });

  it("50 MB of output: the page keeps answering, and the shell's next answer shows after it", async () => {
    const term = page.locator(`[data-terminal-for="${shell}"]`);
    await term.locator(".xterm").click();
    await page.keyboard.type("head -c 37500000 /dev/urandom | base64 -w 200; echo flood-$((40+2))-over\n");
    // While it pours in, the page still runs its own code and redraws its header.
    let answered = 0;
    let slowest = 0;
    const deadline = Date.now() + 240_000;
    while (!(await terminalText(page, shell)).includes("flood-42-over")) {
      if (Date.now() > deadline) throw new Error("the flood's end never showed in the page");
      const asked = Date.now();
      await page.evaluate(() => document.getElementById("connection")?.textContent);
      slowest = Math.max(slowest, Date.now() - asked);
      answered += 1;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(answered).toBeGreaterThan(3);
    // A page that froze under the flood would hold a question for many seconds.
    expect(slowest, "the longest the page took to answer during the flood (ms)").toBeLessThan(5_000);
    // Every byte is either drawn or skipped by the daemon's slow-viewer rule, which the page says.
    const drawn = Number(await term.getAttribute("data-bytes"));
    const skipped = Number(await term.getAttribute("data-skipped"));
    expect(drawn + skipped).toBeGreaterThan(50_000_000);
    if (skipped > 0) expect(await page.locator(".terminal-note").innerText()).toMatch(/skip/i);
    await page.keyboard.type("echo after-$((9*9))\n");
    await waitFor("an answer after the flood", async () => ((await terminalText(page, shell)).includes("after-81") ? true : undefined), 60_000);
  });

  it("pasting more than 1 MiB into a terminal: the agent gets every byte and the server stays up", async () => {
    const webPid = readWebFile(sb.home).pid;
    const term = page.locator(`[data-terminal-for="${shell}"]`);
    await term.locator(".xterm").click();
    await page.keyboard.type("wc -c\n");
    // 1,200 lines of 999 letters: past the server's 1 MiB frame limit as one paste, and each
    // line short enough for the terminal's line discipline.
    const lines = 1200;
    const text = `${"a".repeat(999)}\n`.repeat(lines);
    await term.locator("textarea").evaluate((textarea, pasted) => {
      const data = new DataTransfer();
      data.setData("text/plain", pasted);
      textarea.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, text);
    await page.keyboard.press("Control+D");
    await waitFor("wc's count of the pasted bytes", async () => ((await terminalText(page, shell)).includes(String(lines * 1000)) ? true : undefined), 60_000);
    expect(readWebFile(sb.home).pid).toBe(webPid);
    expect(await term.getAttribute("data-attached")).toBe("true");
    expect(readFileSync(path.join(sb.home, "web.log"), "utf8")).not.toContain("socket_error");
  });

  it("the diff view shows an agent's commit and merges it into main", async () => {
    const spawned = await sb.spawnAgent(["--command", FAKE_AGENT_COMMAND, "--name", "feature"]);
    await sb.waitForLogs(spawned.agentId, "fake-agent ready");
    await sb.ok(["send", spawned.agentId, "write feature.txt from-the-agent"]);
    await sb.waitForLogs(spawned.agentId, "wrote feature.txt");
    await sb.ok(["send", spawned.agentId, "commit feature work"]);
    await sb.waitForLogs(spawned.agentId, /\ncommitted\r?\n/);

    await page.goto(`${new URL(page.url()).origin}/#/`);
    await page.locator(`[data-worktree-id="${spawned.worktreeId}"] [data-action="diff"]`).click();
    const diff = page.locator(`.diff[data-worktree-id="${spawned.worktreeId}"]`);
    await diff.waitFor();
    await expect.poll(() => diff.innerText()).toContain("feature.txt");
    expect(await diff.innerText()).toContain("from-the-agent");
    await photograph("diff");
    await page.locator('[data-action="merge"]').click();
    await confirm(page);
    await waitFor("feature.txt on main", async () => {
      try {
        return sb.git(["show", "main:feature.txt"]) === "from-the-agent" ? true : undefined;
      } catch {
        return undefined;
      }
    });
    const status = await sb.status();
    expect(status.worktrees[spawned.worktreeId!]!.status).toBe("merged");
  });

  it("the queue board shows a ticket awaiting review; approve sends it on to done", async () => {
    const created = await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", "needs a look", "--type", "REV"]);
    const id = created.ticket.id;
    await page.goto(`${new URL(page.url()).origin}/#/queue`);
    const card = page.locator(`[data-column="review"] [data-ticket-id="${id}"]`);
    await card.waitFor({ timeout: 60_000 });
    await photograph("queue");
    await card.locator('[data-action="approve"]').click();
    await confirm(page);
    await page.locator(`[data-column="done"] [data-ticket-id="${id}"]`).waitFor({ timeout: 60_000 });
    const shown = await sb.puJson<{ ticket: { state: string } }>(["ticket", "show", id]);
    expect(shown.ticket.state).toBe("done");
  });

  it("the groups view compares members; pick merges the chosen one and cleans the other", async () => {
    const run = await sb.pu(["group", "run", "make ok.txt", "--agents", "alpha,beta", "--gate", "true", "--aggregate", "gate", "--wait"]);
    expect(run.code, run.stderr).toBe(0);
    const groupId = (/group (g-[0-9a-f]+) started/.exec(run.stderr) ?? [])[1] ?? "";
    await page.goto(`${new URL(page.url()).origin}/#/groups`);
    const group = page.locator(`[data-group-id="${groupId}"]`);
    await group.locator('[data-variant="alpha"]').waitFor();
    expect(await group.locator('[data-variant="beta"] [data-member-state]').innerText()).toBe("done");
    await photograph("groups");
    await group.locator('[data-variant="alpha"] [data-action="pick"]').click();
    await confirm(page);
    await waitFor("alpha's work on main", async () => {
      try {
        return sb.git(["show", "main:alpha.txt"]).includes("alpha line 1") ? true : undefined;
      } catch {
        return undefined;
      }
    });
    const shown = await sb.puJson<{ picked: string | null; members: { variant: string; worktreePath: string | null }[] }>(["group", "status", groupId]);
    expect(shown.picked).toBe("alpha");
  });

  it("the plans view draws the task graph; approve starts the work", async () => {
    const started = await sb.puJson<{ sessionId: string }>(["plan", "start", "three files", "--skip-verify", "--max-workers", "2"]);
    const id = started.sessionId;
    await page.goto(`${new URL(page.url()).origin}/#/plans`);
    const plan = page.locator(`[data-plan-id="${id}"]`);
    await plan.locator('[data-task-id="c"]').waitFor({ timeout: 60_000 });
    expect(await plan.locator("[data-edge]").evaluateAll((edges) => edges.map((e) => e.getAttribute("data-edge")).sort())).toEqual(["a->b", "a->c"]);
    // Dependents are drawn after (to the right of) what they wait for.
    const x = async (task: string) => (await plan.locator(`[data-task-id="${task}"]`).boundingBox())!.x;
    expect(await x("b")).toBeGreaterThan(await x("a"));
    expect(await x("c")).toBe(await x("b"));
    // What a person reads before approving: the planner's design, kept open while the view redraws.
    await plan.locator('[data-action="plan-design"]').click();
    await expect.poll(() => plan.locator(`[data-design-for="${id}"]`).innerText()).toContain("One file per task.");
    await photograph("plans");
    await plan.locator('[data-action="plan-approve"]').click();
    const done = await waitFor("the plan to complete", async () => {
      const shown = await sb.puJson<{ phase: string; approvedAt: string | null }>(["plan", "status", id]);
      if (shown.phase === "FAILED") throw new Error("the plan failed");
      return shown.phase === "COMPLETE" ? shown : undefined;
    }, 120_000, 500);
    expect(done.approvedAt).not.toBeNull();
    await plan.locator('[data-task-status="resolved"][data-task-id="c"]').waitFor();
    expect(await plan.locator(`[data-design-for="${id}"]`).innerText()).toContain("One file per task.");
  });

  it("an agent that starts waiting for a person raises one browser notification and marks the tab title", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const { url } = await startWeb(sb);
    await context.grantPermissions(["notifications"], { origin: new URL(url).origin });
    await context.addInitScript(() => {
      const shown: string[] = [];
      (window as unknown as { __notifications: string[] }).__notifications = shown;
      class Recorded {
        static permission = "granted";
        static requestPermission = () => Promise.resolve("granted");
        onclick: (() => void) | null = null;
        constructor(title: string) {
          shown.push(title);
        }
      }
      (window as unknown as { Notification: unknown }).Notification = Recorded;
    });
    const watcher = await context.newPage();
    await watcher.goto(url);
    await watcher.locator('#connection[data-connected="true"]').waitFor();
    const spawned = await sb.spawnAgent(["--command", FAKE_AGENT_COMMAND, "--root", "--name", "asks"]);
    await row(watcher, spawned.agentId).waitFor();
    await sb.ok(["signal", "turn-end", "--agent", spawned.agentId]);
    const shown = await waitFor("a notification", async () => {
      const list = await watcher.evaluate(() => (window as unknown as { __notifications: string[] }).__notifications);
      return list.length > 0 ? list : undefined;
    });
    expect(shown).toEqual(["asks is waiting (done)"]);
    await expect.poll(() => watcher.title()).toMatch(/waiting for you/);
    await usage();
  });

  async function usage(): Promise<void> {
    await page.goto(`${new URL(page.url()).origin}/#/usage`);
    await page.locator(".usage").first().waitFor();
    await photograph("usage");
  }

  it("after pu web restarts, an open page's old key is refused and the page says in one line to open a new link", async () => {
    const { port } = readWebFile(sb.home);
    await page.goto(`${new URL(page.url()).origin}/#/`);
    await page.locator('#connection[data-connected="true"]').waitFor();
    await sb.ok(["web", "stop"]);
    await startWeb(sb, ["--port", String(port)]);
    const line = page.locator("[data-signed-out]");
    await line.waitFor({ timeout: 30_000 });
    expect(await line.innerText()).toMatch(/run `pu web` again/);
    // A fresh link signs the same browser in again.
    const { url } = await startWeb(sb);
    await page.goto(url);
    await page.locator('#connection[data-connected="true"]').waitFor();
  });
});
