// pu-core's screenReadiness read off screens that a real headless xterm (pu-engine's
// screen model) rendered from synthetic streams drawn the way each CLI draws: colours,
// cursor moves, line erases, an inline redraw (Ink), a scroll region, the alternate screen.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { screenReadiness, type ScreenReadiness } from "@pu/core/screen-readiness";
import { OutputRing } from "../src/session/output-ring.js";
import { ScreenModel } from "../src/session/screen-model.js";

const ESC = "\x1b";
const CSI = `${ESC}[`;
const rgb = (r: number, g: number, b: number) => `${CSI}38;2;${r};${g};${b}m`;
const dim = (s: string) => `${CSI}2m${s}${CSI}22m`;
const reset = `${CSI}0m`;
const at = (row: number, col: number) => `${CSI}${row};${col}H`;
/** Ink (Claude Code) erases its last frame line by line before drawing the next one. */
const eraseLines = (n: number) => `${CSI}2K${`${CSI}1A${CSI}2K`.repeat(n - 1)}${CSI}G`;
const osc7501 = (state: string) => `${ESC}]7501;state=${state}:app=codex\x07`;

const models: ScreenModel[] = [];
afterEach(async () => {
  await Promise.all(models.splice(0).map((m) => m.close()));
});

/** A terminal that keeps the stream fed so far; `read` gives what the readiness sees now. */
function terminal(cols = 80, rows = 24) {
  const ring = new OutputRing();
  const model = new ScreenModel(ring, cols, rows);
  models.push(model);
  return {
    model,
    async draw(...chunks: (string | Buffer)[]): Promise<void> {
      for (const chunk of chunks) {
        ring.append(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
        model.noteOutput();
      }
      await model.settle();
    },
    read(agentType: string): ScreenReadiness {
      return screenReadiness(agentType, { rows: model.rows(), reportedState: model.reportedState?.state ?? null });
    },
  };
}

const claudeInputBox = (width: number) =>
  `${rgb(136, 136, 136)}╭${"─".repeat(width - 2)}╮\r\n│ > ${" ".repeat(width - 5)}│\r\n╰${"─".repeat(width - 2)}╯${reset}\r\n`;

describe("screen readiness: claude", () => {
  it("reads busy under the spinner, idle once the frame is redrawn with the footer, and a permission dialog", async () => {
    const t = terminal();
    await t.draw(
      `${CSI}?25l${CSI}?2004h`,
      `${rgb(215, 119, 87)}✻${reset} Welcome to Claude Code!\r\n\r\n`,
      `${dim(">")} SAY: hello\r\n\r\n`,
    );
    // Frame 1 (3 + 2 lines): spinner, then the input box.
    await t.draw(`${rgb(215, 119, 87)}✢ Pondering…${reset} ${dim("(3s · ↑ 12 tokens · esc to interrupt)")}\r\n\r\n`, claudeInputBox(60));
    expect(t.model.lastNonEmptyLine()).toMatch(/^╰─+╯$/);
    expect(t.read("claude")).toBe("busy");

    // Frame 2: Ink erases the 5 frame lines plus the line it stands on, and draws the answer.
    await t.draw(
      eraseLines(6),
      `${rgb(255, 255, 255)}⏺${reset} hello\r\n\r\n`,
      `${rgb(215, 119, 87)}✻${reset} ${dim("Churned for 3s")}\r\n\r\n`,
      claudeInputBox(60),
      `  ${dim("? for shortcuts")}`,
    );
    expect(t.model.rows().join("\n")).not.toContain("esc to interrupt");
    expect(t.read("claude")).toBe("idle");
    expect(t.model.lastNonEmptyLine()).toBe("? for shortcuts");

    // Frame 3: a tool call asks first.
    await t.draw(
      eraseLines(6),
      `${rgb(177, 185, 249)}╭${"─".repeat(58)}╮${reset}\r\n`,
      `│ Bash command${" ".repeat(45)}│\r\n│   echo hi > out.txt${" ".repeat(38)}│\r\n│ Do you want to proceed?${" ".repeat(34)}│\r\n`,
      `│ ${rgb(177, 185, 249)}❯ 1. Yes${reset}${" ".repeat(49)}│\r\n│   2. No, and tell Claude what to do differently (esc)${" ".repeat(4)}│\r\n`,
      `╰${"─".repeat(58)}╯`,
    );
    expect(t.read("claude")).toBe("permission");
  });

  it("reads unknown on the welcome screen before the footer is drawn", async () => {
    const t = terminal();
    await t.draw(`${rgb(215, 119, 87)}✻${reset} Welcome to Claude Code!\r\n`);
    expect(t.read("claude")).toBe("unknown");
  });
});

describe("screen readiness: codex", () => {
  /** Codex draws inline: its viewport is the bottom of the screen, kept with a scroll region. */
  const viewport = (status: string) => `${CSI}?2026h${at(20, 1)}${CSI}J${status}\r\n\r\n${rgb(120, 120, 255)}›${reset} Ask Codex to do anything\r\n${CSI}?2026l`;

  it("reads busy while it works, unknown (not idle) while the answer streams, idle after `Worked for`", async () => {
    const t = terminal();
    await t.draw(`${CSI}1;18r${at(18, 1)}› SAY: hello\r\n${CSI}r`);
    await t.draw(viewport(`${rgb(200, 200, 200)}•${reset} ${CSI}1mWorking${CSI}22m ${dim("(2s • esc to interrupt)")}`));
    expect(t.read("codex")).toBe("busy");

    // Answer text streams into the scroll region; the Working line is gone meanwhile.
    await t.draw(`${CSI}1;18r${at(18, 1)}\r\n• hello from the model, still going`, viewport(""), `${CSI}r`);
    expect(t.model.rows().join("\n")).not.toMatch(/esc to interrupt/);
    expect(t.read("codex")).toBe("unknown");

    await t.draw(`${CSI}1;18r${at(18, 1)}\r\n${dim(`─ Worked for 3s ${"─".repeat(40)}`)}`, viewport(""), `${CSI}r`);
    expect(t.read("codex")).toBe("idle");
  });

  it("takes its OSC 7501 state report over the text it has drawn", async () => {
    const t = terminal();
    await t.draw(`${at(10, 1)}${dim("─ Worked for 3s ─")}`, viewport(""));
    expect(t.read("codex")).toBe("idle");
    // Second turn: the old `Worked for` is still on the screen, the answer streams, no Working line.
    await t.draw(osc7501("working"), `${ESC}]0;⠙ codex\x07`, `${at(12, 1)}• second answer streaming`);
    expect(t.model.snapshot().title).toBe("⠙ codex");
    expect(t.read("codex")).toBe("busy");
    await t.draw(osc7501("done"), `${at(13, 1)}${CSI}K`);
    expect(t.read("codex")).toBe("idle");
    // A busy marker drawn now beats a stale idle report.
    await t.draw(viewport(`• Working (0s • esc to interrupt)`));
    expect(t.read("codex")).toBe("busy");
    await t.draw(osc7501("idle"), viewport(""));
    expect(t.read("codex")).toBe("idle");
  });
});

describe("screen readiness: opencode", () => {
  /** OpenCode is a full-screen TUI on the alternate screen, drawn by absolute positions. */
  function frame(body: string[], bottom: string): string {
    let out = `${CSI}?2026h${CSI}H${CSI}2J`;
    body.forEach((line, i) => (out += `${at(i + 2, 3)}${line}`));
    return out + `${at(22, 3)}${rgb(90, 90, 90)}┃${reset} ${at(24, 2)}${bottom}${CSI}?2026l`;
  }

  it("reads busy with the progress bar's `esc interrupt`, idle on the `▣ Build · model · Ns` line", async () => {
    const t = terminal();
    await t.draw(`${CSI}?1049h`);
    await t.draw(
      frame(
        [`${rgb(250, 178, 131)}┃${reset} SAY: hello`],
        `${rgb(250, 178, 131)}■■■${rgb(80, 80, 80)}⬝⬝⬝⬝⬝${reset}  ${CSI}1mesc${CSI}22m ${dim("interrupt")}`,
      ),
    );
    expect(t.model.snapshot().alternateScreen).toBe(true);
    expect(t.read("opencode")).toBe("busy");

    await t.draw(
      frame(
        [`┃ SAY: hello`, "", "hello from the model", "", `${rgb(250, 178, 131)}▣${reset} Build ${dim("· fake-model · 1.4s")}`],
        `${dim("~/project")}${at(24, 50)}${dim("tab agents  ctrl+p commands")}`,
      ),
    );
    expect(t.read("opencode")).toBe("idle");

    // Second turn: the first answer's ▣ line is still there, but so is the bar.
    await t.draw(
      frame(
        [`┃ SAY: hello`, "", "hello from the model", "", `▣ Build · fake-model · 1.4s`, "", "┃ SAY: again"],
        `■⬝⬝⬝⬝⬝⬝⬝  esc interrupt`,
      ),
    );
    expect(t.read("opencode")).toBe("busy");
  });
});

describe("screen readiness: other programs", () => {
  it("reads unknown for types without markers, whatever is drawn", async () => {
    const t = terminal();
    await t.draw("$ echo esc to interrupt\r\nesc to interrupt\r\n? for shortcuts\r\n$ ");
    expect(t.read("terminal")).toBe("unknown");
    expect(t.read("my-custom-agent")).toBe("unknown");
    expect(t.read("constructor")).toBe("unknown");
    expect(t.read("claude")).toBe("busy");
  });
});

// The raw bytes the real CLIs wrote under pu (tests/real-agents/fixtures, taken by the
// real-agents e2e suite), rendered at the size they were drawn for.
describe("screen readiness: real captures", () => {
  const fixtures = new URL("../../../tests/real-agents/fixtures/", import.meta.url);
  for (const agent of ["claude", "codex", "opencode"]) {
    it(`${agent}: the capture taken while the model thought reads busy, the one after its answer idle`, async () => {
      for (const [moment, expected] of [["busy", "busy"], ["idle", "idle"]] as const) {
        const t = terminal(120, 40);
        await t.draw(readFileSync(new URL(`${agent}-${moment}.bin`, fixtures)));
        expect(t.read(agent), `${agent}-${moment}.bin`).toBe(expected);
      }
    });
  }
});
