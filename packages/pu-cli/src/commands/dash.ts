import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command, Option } from "../clipanion.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";
import { cliBinPath } from "../daemon-client.js";

export default class DashCommand extends PuCommand {
  static override paths = [["dash"]];
  static override usage = Command.Usage({
    description: "A live full-screen dashboard of every agent: state, screen, one key to act",
    details:
      "Left: the project's agents (or, with `--all`, every project's) with their live state, why they wait, idle time and type; right: the selected agent's screen as the daemon renders it; bottom: the keys. ↑/↓ or j/k select, Enter attaches (detach returns here), s sends a line, b benches, p plays, K kills, d shows the worktree's diff, m merges, c cleans (each asks y/n first), / filters, ? lists the keys, q quits. An agent that starts waiting rings the bell once (`--no-bell` silences it; `notify-send` is used where it exists).",
    examples: [
      ["This project's agents", "$0 dash"],
      ["Every project the daemon knows", "$0 dash --all"],
    ],
  });

  all = Option.Boolean("--all", false, { description: "Every project the daemon knows" });
  bell = Option.Boolean("--bell", true, { description: "Ring the bell when an agent starts waiting (--no-bell)" });

  async run(): Promise<number> {
    if (!process.stdout.isTTY || !process.stdin.isTTY) throw new CliUsageError("pu dash needs a terminal (use `pu status --watch` in a pipe)");
    const projectRoots = this.all ? undefined : [this.projectRoot()];
    const cliBin = cliBinPath();
    // Its own process: Ink and React are ES modules, and every other command starts without them.
    const main = path.join(path.dirname(cliBin), "..", "dist", "dash", "main.js");
    const handOffDir = mkdtempSync(path.join(os.tmpdir(), "pu-dash-"));
    const handOffFile = path.join(handOffDir, "hand-off.json");
    let child: ChildProcess | undefined;
    // Its terminal closed (SIGHUP) or told to stop (SIGTERM), pu dash would die before its finally:
    // the hand-off folder would stay in the temp dir. The child (dashboard or attach) is stopped
    // too, then the signal is raised again so pu dash ends as the signal says.
    const leave = (signal: NodeJS.Signals) => {
      rmSync(handOffDir, { recursive: true, force: true });
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
      process.off("SIGHUP", leave);
      process.off("SIGTERM", leave);
      process.kill(process.pid, signal);
    };
    process.on("SIGHUP", leave);
    process.on("SIGTERM", leave);
    const started = (spawned: ChildProcess) => (child = spawned);
    let select: string | undefined;
    try {
      for (;;) {
        const options = { ...(projectRoots ? { projectRoots } : {}), bell: this.bell, ...(select ? { select } : {}) };
        const code = await runChild(process.execPath, [main, JSON.stringify(options), handOffFile], started, interactiveEnv());
        if (!existsSync(handOffFile)) return code;
        const handOff = JSON.parse(readFileSync(handOffFile, "utf8")) as { attach: string };
        rmSync(handOffFile);
        // Enter in the dashboard: the agent's terminal, until its detach key; then the dashboard again.
        this.report.note(`[pu dash: ${handOff.attach}; Ctrl-\\ returns to the dashboard]`);
        await runChild(process.execPath, [cliBin, "attach", handOff.attach], started);
        select = handOff.attach;
      }
    } finally {
      process.off("SIGHUP", leave);
      process.off("SIGTERM", leave);
      rmSync(handOffDir, { recursive: true, force: true });
    }
  }
}

/**
 * The dashboard's environment without the variables that say "CI": Ink draws only its last
 * frame there. The dashboard needs a terminal anyway (checked above), so it is never a CI log.
 */
function interactiveEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== "CI" && key !== "CONTINUOUS_INTEGRATION" && !key.startsWith("CI_")));
}

/** Runs a program on this terminal and resolves with its exit code; Ctrl-C is the child's to handle. */
function runChild(file: string, args: string[], started: (child: ChildProcess) => void, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const child = spawn(file, args, { stdio: "inherit", env });
    started(child);
    const ignore = () => undefined;
    process.on("SIGINT", ignore);
    process.on("SIGQUIT", ignore);
    child.on("error", (error) => {
      process.off("SIGINT", ignore);
      process.off("SIGQUIT", ignore);
      reject(error);
    });
    child.on("exit", (code, signal) => {
      process.off("SIGINT", ignore);
      process.off("SIGQUIT", ignore);
      resolve(code ?? (signal ? 130 : 1));
    });
  });
}
