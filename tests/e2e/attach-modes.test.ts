// `pu attach` in a real terminal (tmux on a private socket): an agent that switches the
// terminal to the alternate screen, hides the cursor and turns on mouse reporting and the
// application keypad must not leave it that way after the user detaches.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PU_BIN, PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

const FLAGS = "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{keypad_flag} #{keypad_cursor_flag}";

describe("attach restores the terminal", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let socket: string;
  let tmuxPid: number | undefined;
  const tmux = (args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8", env: sb.env() }).trim();

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-attach-modes-");
    socket = path.join(sb.base, "tmux.sock");
    await sb.puJson(["init"]);
  });
  afterAll(async () => {
    if (tmuxPid !== undefined) {
      try {
        process.kill(tmuxPid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("detaching (Ctrl-\\) leaves the normal screen, a visible cursor, no mouse reporting and the numeric keypad", async () => {
    const agent = await sb.spawnAgent(["--agent", "terminal", "--root"]);
    await sb.waitForAgent(agent.agentId, "its shell prompt", (a) => a.status === "waiting");
    // The pane's shell outlives `pu attach`, so the terminal can be read after the detach.
    const attach = `${JSON.stringify(process.execPath)} ${JSON.stringify(PU_BIN)} attach ${agent.agentId}; echo pu-attach-ended; sleep 60`;
    tmux(["new-session", "-d", "-x", "120", "-y", "30", "-c", sb.root, attach]);
    tmuxPid = Number(tmux(["display", "-p", "#{pid}"]));
    sb.trackPid(tmuxPid);
    const pane = () => tmux(["capture-pane", "-p"]);
    // The shell's prompt ends in "$ " or, as root, "# ".
    await waitFor("pu attach to show the agent's prompt", () => /[$#] *$/m.test(pane()), 30_000);

    await sb.ok(["send", agent.agentId, String.raw`printf '\033[?1049h\033[?25l\033[?1000h\033[?1h\033=alt screen on'`]);
    await waitFor("the agent to switch the terminal's modes", () => tmux(["display", "-p", FLAGS]) === "1 0 1 1 1", 30_000);

    tmux(["send-keys", "C-\\"]);
    await waitFor("pu attach to end", () => pane().includes("pu-attach-ended"), 30_000);
    expect(tmux(["display", "-p", FLAGS])).toBe("0 1 0 0 0");
    expect(pane()).toContain(`[detached from ${agent.agentId}]`);
    await sb.ok(["kill", agent.agentId]);
  });
});
