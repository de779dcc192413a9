import { describe, expect, it } from "vitest";
import { agentReadiness, HOOKED_QUIET_SCREEN_MS, IDLE_MARKER_STABLE_MS, QUIET_SCREEN_MS, type ReadinessInputs } from "../src/agent-readiness.js";

const T0 = 1_000_000;
const CLAUDE_BUSY = ["❯ fix the test", "· Harmonizing…", "❯", "  ⏵⏵ auto mode on (shift+tab to cycle) · esc to interrupt"];
const CLAUDE_IDLE = ["❯ fix the test", "● done", "✻ Cooked for 10s · done 5:06 AM", "❯", "  ⏵⏵ auto mode on (shift+tab to cycle)"];
const CLAUDE_WELCOME = [" ▐▛███▛█   Claude Code v2.1.330", "❯", "  ⏵⏵ auto mode on (shift+tab to cycle)"];

function inputs(over: Partial<ReadinessInputs>): ReadinessInputs {
  return {
    agentType: "claude",
    now: T0,
    rows: [],
    reportedState: null,
    lastContentChange: T0 - 10_000,
    submittedAt: 0,
    turnSeenSince: false,
    signal: null,
    outputTail: new Uint8Array(0),
    idleSeconds: 1,
    idleThresholdSeconds: 30,
    ...over,
  };
}

describe("agentReadiness", () => {
  it("a hook signal newer than the last Enter decides, whatever the screen shows", () => {
    const submittedAt = T0 - 5000;
    expect(agentReadiness(inputs({ rows: CLAUDE_BUSY, submittedAt, signal: { kind: "turn_end", at: T0 - 100 } }))).toEqual({ status: "waiting", waitingReason: "turn_end" });
    expect(agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt, signal: { kind: "permission", at: T0 - 100 } }))).toEqual({ status: "waiting", waitingReason: "permission" });
    expect(agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt, signal: { kind: "busy", at: T0 - 100 } })).status).toBe("streaming");
    // An Enter after the signal (a new prompt, a dialog answered) makes it stale: the screen decides again.
    const stale = agentReadiness(inputs({ rows: CLAUDE_BUSY, submittedAt, signal: { kind: "turn_end", at: submittedAt - 1 } }));
    expect(stale.status).toBe("streaming");
  });

  it("claude: busy while its spinner footer shows; waiting (turn_end) once its idle line has stood still", () => {
    const submittedAt = T0 - 20_000;
    expect(agentReadiness(inputs({ rows: CLAUDE_BUSY, submittedAt }))).toEqual({ status: "streaming", screenBusy: true });
    const justDrawn = agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt, turnSeenSince: true, lastContentChange: T0 - 100 }));
    expect(justDrawn).toEqual({ status: "streaming", recheckAt: T0 - 100 + IDLE_MARKER_STABLE_MS });
    const settled = agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt, turnSeenSince: true, lastContentChange: T0 - IDLE_MARKER_STABLE_MS }));
    expect(settled).toEqual({ status: "waiting", waitingReason: "turn_end" });
  });

  it("the previous turn's idle line right after an Enter is not an answer", () => {
    // Submitted, screen not changed since: stale evidence, only the idle threshold could decide.
    const r = agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt: T0 - 200, lastContentChange: T0 - 5000 }));
    expect(r.status).toBe("streaming");
    // Changed since the Enter but never seen busy: it takes the longer quiet period.
    const quick = agentReadiness(inputs({ rows: CLAUDE_IDLE, submittedAt: T0 - 5000, lastContentChange: T0 - IDLE_MARKER_STABLE_MS }));
    expect(quick).toEqual({ status: "streaming", recheckAt: T0 - IDLE_MARKER_STABLE_MS + QUIET_SCREEN_MS });
  });

  it("with pu's turn hooks installed, a typed prompt the CLI has not taken yet is not a turn over: the screen must stand still far longer", () => {
    // The prompt echoed, the screen still for longer than the unhooked rule waits, no hook yet:
    // a loaded machine where Claude has not started the turn (once read as done before its tool ran).
    const slow = { rows: CLAUDE_IDLE, submittedAt: T0 - 5000, lastContentChange: T0 - QUIET_SCREEN_MS - 500 };
    expect(agentReadiness(inputs(slow)).status).toBe("waiting");
    expect(agentReadiness(inputs({ ...slow, hooked: true }))).toEqual({ status: "streaming", recheckAt: slow.lastContentChange + HOOKED_QUIET_SCREEN_MS });
    // The hook's busy signal then holds it streaming until its Stop hook says turn_end.
    expect(agentReadiness(inputs({ ...slow, hooked: true, signal: { kind: "busy", at: T0 - 100 } })).status).toBe("streaming");
    // A hook that never comes (a broken hook) still ends in waiting, later.
    expect(agentReadiness(inputs({ ...slow, hooked: true, submittedAt: T0 - HOOKED_QUIET_SCREEN_MS - 1000, lastContentChange: T0 - HOOKED_QUIET_SCREEN_MS }))).toEqual({ status: "waiting", waitingReason: "turn_end" });
  });

  it("a permission dialog reads waiting (permission)", () => {
    const rows = ["Bash command", "  rm -rf build", "Do you want to proceed?", "❯ 1. Yes", "  2. No"];
    expect(agentReadiness(inputs({ rows, submittedAt: T0 - 1000, lastContentChange: T0 - 10 }))).toEqual({ status: "waiting", waitingReason: "permission" });
  });

  it("a welcome screen that stands still reads waiting (idle); one still drawing does not", () => {
    expect(agentReadiness(inputs({ rows: CLAUDE_WELCOME, lastContentChange: T0 - QUIET_SCREEN_MS }))).toEqual({ status: "waiting", waitingReason: "idle" });
    expect(agentReadiness(inputs({ rows: CLAUDE_WELCOME, lastContentChange: T0 - 100 }))).toEqual({ status: "streaming", recheckAt: T0 - 100 + QUIET_SCREEN_MS });
  });

  it("a prompt given on the command line: a still screen is not waiting until the turn is seen", () => {
    const rows = ["  >_ OpenAI Codex (v0.169.0)", "› Ask Codex to do anything"];
    const starting = agentReadiness(inputs({ agentType: "codex", rows, submittedAt: T0 - 10_000, lastContentChange: T0 - 9000, idleSeconds: 9 }));
    expect(starting.status).toBe("streaming");
    // The 30 s idle rule still ends it.
    const stuck = agentReadiness(inputs({ agentType: "codex", rows, submittedAt: T0 - 40_000, lastContentChange: T0 - 39_000, idleSeconds: 39 }));
    expect(stuck).toEqual({ status: "waiting", waitingReason: "idle" });
  });

  it("codex: its own state report counts only when it came after the Enter", () => {
    const rows = ["› SAY: hi", "• hi", "› Ask Codex to do anything"];
    const submittedAt = T0 - 3000;
    const fresh = agentReadiness(inputs({ agentType: "codex", rows, submittedAt, reportedState: { state: "working", at: T0 - 2000 }, lastContentChange: T0 - 1000 }));
    expect(fresh.status).toBe("streaming");
    const done = agentReadiness(inputs({ agentType: "codex", rows, submittedAt, reportedState: { state: "done", at: T0 - 900 }, lastContentChange: T0 - 900 }));
    expect(done).toEqual({ status: "waiting", waitingReason: "turn_end" });
    // A `done` from the previous turn, before this Enter, proves nothing.
    const old = agentReadiness(inputs({ agentType: "codex", rows, submittedAt, reportedState: { state: "done", at: T0 - 4000 }, lastContentChange: T0 - 4000 }));
    expect(old.status).toBe("streaming");
  });

  it("programs without markers keep the seed rules, with the reason: a shell prompt, or quiet past the threshold", () => {
    const prompt = new TextEncoder().encode("done\r\n$ ");
    expect(agentReadiness(inputs({ agentType: "terminal", outputTail: prompt }))).toEqual({ status: "waiting", waitingReason: "prompt" });
    expect(agentReadiness(inputs({ agentType: "terminal", idleSeconds: 31 }))).toEqual({ status: "waiting", waitingReason: "idle" });
    // A still screen alone means nothing for an unknown program (a build printing nothing for a while).
    expect(agentReadiness(inputs({ agentType: "terminal", rows: ["compiling…"], idleSeconds: 5 })).status).toBe("streaming");
  });
});
