// `pu dash` in a real terminal: tmux runs a shell on its own socket, the test types `pu dash`
// into it and reads the screen with capture-pane, against a real daemon and real agents.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox, PU_BIN } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

describe("pu dash in a terminal", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let socket: string;
  let talker: string;
  let shell: string;
  let conflicted: { agentId: string; worktreePath?: string };

  const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
  const screen = () => tmux("capture-pane", "-p", "-t", "dash");
  const keys = (...k: string[]) => tmux("send-keys", "-t", "dash", ...k);
  const waitScreen = (what: string, check: (text: string) => boolean, timeoutMs = 15_000) =>
    waitFor(what, () => {
      const text = screen();
      return check(text) ? text : undefined;
    }, timeoutMs, 100).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; the screen:\n${screen()}`);
    });

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-dash-");
    await sb.ok(["init"]);
    const script = path.join(sb.base, "talker.sh");
    writeFileSync(script, 'echo "talker ready"\nwhile read line; do echo "got: $line"; done\n');
    talker = (await sb.spawnAgent(["--root", "--name", "talker", "--command", `/bin/sh ${script}`])).agentId;
    shell = (await sb.spawnAgent(["--name", "shell", "--command", "/bin/sh"])).agentId;
    // A worktree whose branch and main both change README.md: merging it conflicts.
    conflicted = await sb.spawnAgent(["--name", "conflict", "--command", "/bin/sh"]);
    sb.commitFiles({ "README.md": "from the worktree\n" }, "worktree change", conflicted.worktreePath);
    sb.commitFiles({ "README.md": "from main\n" }, "main change");
    socket = path.join(sb.base, "tmux.sock");
    const env = sb.env();
    const envArgs = ["PU_HOME", "PATH", "HOME", "NO_COLOR", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"]
      .filter((k) => env[k] !== undefined)
      .map((k) => `${k}=${env[k]}`);
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "dash", "-x", "100", "-y", "30", "-c", sb.root, "env", ...envArgs, "PS1=$ ", "/bin/sh");
    keys(`${process.execPath} ${PU_BIN} dash --no-bell`, "Enter");
  });
  afterAll(async () => {
    try {
      execFileSync("tmux", ["-S", socket, "kill-server"]);
    } catch {
      // already gone
    }
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("lists every agent with its state, and the selected agent's screen beside the list", async () => {
    const text = await waitScreen("the agent list", (t) => t.includes("talker") && t.includes("shell") && t.includes("conflict"));
    expect(text).toMatch(/talker\s+terminal\s+\S+/);
    expect(text).toContain("q quit");
    // The first row (the root agent) is selected: its screen is on the right.
    await waitScreen("talker's screen", (t) => t.includes(talker) && t.includes("talker ready"));
  });

  it("updates the screen when the agent prints, and sends a line with s", async () => {
    await sb.ok(["send", talker, "from the test"]);
    await waitScreen("the new output", (t) => t.includes("got: from the test"));
    keys("s");
    await waitScreen("the send prompt", (t) => t.includes(`send to ${talker}`));
    keys("typed in dash", "Enter");
    await waitScreen("the line the dashboard sent", (t) => t.includes("got: typed in dash"));
  });

  it("attaches with Enter, and the detach key comes back to the dashboard", async () => {
    keys("Enter");
    await waitScreen("the attached agent", (t) => t.includes(`[pu dash: ${talker}; Ctrl-\\ returns to the dashboard]`) && t.includes("got: typed in dash"));
    keys("C-\\");
    await waitScreen("the dashboard again", (t) => t.includes("q quit") && /● \(root\)\s+talker/.test(t));
  });

  /** Moves the selection (j/k) until the screen pane's title names the agent. */
  const selectAgent = async (agentId: string, order: string[]): Promise<void> => {
    const title = () => screen().split("\n")[0] ?? "";
    const current = order.findIndex((id) => title().includes(id));
    const target = order.indexOf(agentId);
    const step = target > current ? "j" : "k";
    for (let i = 0; i < Math.abs(target - current); i++) keys(step);
    await waitScreen(`${agentId} selected`, () => title().includes(agentId));
  };

  it("merging a worktree that conflicts names the files; K kills after y", async () => {
    const order = [talker, shell, conflicted.agentId];
    await selectAgent(conflicted.agentId, order);
    keys("m");
    await waitScreen("the merge question", (t) => /merge conflict\S*\? y\/n/.test(t));
    keys("y");
    await waitScreen("the conflict", (t) => t.includes("merge conflicts in: README.md"));

    await selectAgent(shell, order);
    keys("K");
    await waitScreen("the kill question", (t) => t.includes(`kill ${shell}? y/n`));
    keys("y");
    await waitFor("the shell agent killed", async () => !(await sb.agent(shell)).live, 15_000);
    await waitScreen("its row broken", (t) => /shell\s+Terminal\s+terminal\s+broken/.test(t));
  });

  it("tab shows the work queue, then the plan sessions, then the groups, then the screen again", async () => {
    keys("Tab");
    await waitScreen("the queue tab", (t) => t.includes("work queue") && /queue running: 0\/\d+ slots used/.test(t) && t.includes("no tickets"));
    keys("Tab");
    await waitScreen("the plans tab", (t) => t.includes("plan sessions") && t.includes("no plan sessions"));
    keys("Tab");
    await waitScreen("the groups tab", (t) => t.includes("multi-agent groups") && t.includes("no groups"));
    keys("Tab");
    await waitScreen("the screen again", (t) => !t.includes("multi-agent groups") && !t.includes("plan sessions") && !t.includes("work queue"));
  });

  it("says what pu could not read (a corrupt hosts.json) in a line under the list, on its own, and the line goes on its own once the file is fixed", async () => {
    const hostsFile = path.join(sb.home, "hosts.json");
    const problemLine = /^problem: /m;
    // The dashboard follows the status already (the file goes bad under it, not before it starts).
    await waitScreen("the agent list", (t) => /● \(root\)\s+talker/.test(t) && !problemLine.test(t));
    // Nothing else happens: no `pu status`, no agent printing. While the dashboard follows the
    // status, the daemon looks at hosts.json (a stat every ~1.5 s) and pushes the new problem.
    writeFileSync(hostsFile, "{ not json");
    const text = await waitScreen("the problem line, with nothing else asking", (t) => problemLine.test(t), 6_000);
    // Worded as pu status says it.
    const said = (await sb.ok(["status"])).split("\n").find((l) => l.startsWith("problem: ")) ?? "";
    expect(said).toContain(`${hostsFile}: not valid JSON`);
    const lines = text.split("\n");
    const shown = lines.filter((l) => l.startsWith("problem: ")).map((l) => l.trimEnd());
    expect(shown).toHaveLength(1);
    // One line, cut to the terminal's width (100 columns) where pu status has the whole of it.
    expect(shown[0]!.length).toBeLessThanOrEqual(100);
    expect(said.length > 100 ? shown[0]!.endsWith("…") && said.startsWith(shown[0]!.slice(0, -1)) : shown[0] === said).toBe(true);
    // Under the list, above the keys: the agents keep their rows.
    expect(text).toMatch(/● \(root\)\s+talker/);
    expect(lines.findIndex((l) => l.startsWith("problem: "))).toBeGreaterThan(lines.findIndex((l) => /● \(root\)\s+talker/.test(l)));
    expect(lines.findIndex((l) => l.includes("q quit"))).toBeGreaterThan(lines.findIndex((l) => l.startsWith("problem: ")));
    expect(readFileSync(hostsFile, "utf8")).toBe("{ not json");

    // Fixed by the person: the line goes by itself, again with nothing else asking.
    writeFileSync(hostsFile, `${JSON.stringify({ version: 1, hosts: [] })}\n`);
    await waitScreen("the problem line gone, with nothing else asking", (t) => !t.includes("problem:") && /● \(root\)\s+talker/.test(t), 6_000);
    expect(await sb.ok(["status"])).not.toContain("problem:");
  });

  it("a remote-projects.json that goes bad while the dashboard is open shows as a problem line on its own, and goes on its own once fixed", async () => {
    const placementsFile = path.join(sb.home, "remote-projects.json");
    await waitScreen("the agent list", (t) => /● \(root\)\s+talker/.test(t) && !t.includes("problem:"));
    writeFileSync(placementsFile, "{ not json");
    const text = await waitScreen("the problem line, with nothing else asking", (t) => /^problem: /m.test(t), 6_000);
    expect(text).toMatch(/^problem: agents placed on hosts are not shown or reached/m);
    expect(readFileSync(placementsFile, "utf8")).toBe("{ not json");
    writeFileSync(placementsFile, `${JSON.stringify({ version: 1, projects: [] })}\n`);
    await waitScreen("the problem line gone, with nothing else asking", (t) => !t.includes("problem:") && /● \(root\)\s+talker/.test(t), 6_000);
    expect(await sb.ok(["status"])).not.toContain("problem:");
  });

  it("fits a resize to 80×24, and q gives the terminal back", async () => {
    tmux("resize-window", "-t", "dash", "-x", "80", "-y", "24");
    const small = await waitScreen("the smaller frame", (t) => t.includes("talker") && Math.max(...t.split("\n").map((l) => l.length)) <= 80);
    expect(small.trimEnd().split("\n").length).toBeLessThanOrEqual(24);
    expect(small).toMatch(/● \(root\)\s+talker/);
    keys("q");
    // The dashboard's alternate screen is gone: the shell's own screen and prompt are back.
    const after = await waitScreen("the shell prompt back", (t) => !t.includes("q quit") && t.trimEnd().split("\n").at(-1) === "$");
    expect(after).not.toMatch(/● \(root\)/);
    expect(after).toContain("pu dash --no-bell");
  });

  it("leaves nothing in the temp dir when its terminal closes under it", async () => {
    const tmp = path.join(sb.base, "dash-tmp");
    mkdirSync(tmp);
    keys(`TMPDIR=${tmp} ${process.execPath} ${PU_BIN} dash --no-bell`, "Enter");
    await waitScreen("the dashboard again", (t) => /● \(root\)\s+talker/.test(t));
    expect(readdirSync(tmp).filter((name) => name.startsWith("pu-dash-"))).toHaveLength(1);
    // The window closing hangs up the shell and the dashboard in it (SIGHUP), not q.
    tmux("kill-session", "-t", "dash");
    await waitFor("the dashboard's temp folder removed", () => (readdirSync(tmp).length === 0 ? true : undefined), 10_000, 100);
  });
});
