/**
 * Turn-end hooks of the agent CLIs that offer them. pu hands the CLI its own extra settings
 * whose hooks run `pu signal … --hook` with the agent's PU_AGENT_ID (inherited from the
 * agent's environment), so the daemon hears "turn over" from the CLI itself instead of
 * guessing from the screen. The user's own settings stay in force: Claude merges a
 * `--settings` file over its other settings layers.
 *
 * Claude Code: Stop (the answer is complete), UserPromptSubmit (a turn begins), and
 * Notification with `permission_prompt` (a permission dialog is up). Codex reports its state
 * in the terminal stream (OSC 7501), which the screen model reads; OpenCode has no hook pu
 * can install without touching the user's own config directories, so its screen is read.
 */
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import { shellQuote } from "@pu/core/template";
import { locatePuCli } from "../pu-cli-path.js";

/** Extra arguments that install pu's hooks into an agent CLI; [] when the type has none or the CLI is not found. */
export function turnHookArgs(agentType: string, home: string): string[] {
  if (agentType !== "claude") return [];
  const cli = locatePuCli();
  if (!cli) return [];
  const file = path.join(home, "agent-hooks", "claude-settings.json");
  writeIfChanged(file, `${JSON.stringify(claudeHookSettings(process.execPath, cli), null, 2)}\n`);
  return ["--settings", file];
}

/** Claude runs hook commands through a shell: both paths are quoted as single words. */
function claudeHookSettings(node: string, cli: string): unknown {
  const signal = (name: string) => [{ type: "command", command: `${shellQuote(node)} ${shellQuote(cli)} signal ${name} --hook`, timeout: 10 }];
  return {
    hooks: {
      UserPromptSubmit: [{ hooks: signal("busy") }],
      Stop: [{ hooks: signal("turn-end") }],
      Notification: [{ matcher: "permission_prompt", hooks: signal("permission") }],
    },
  };
}

/** Every agent start would otherwise rewrite the same file; an unchanged one is left alone. */
function writeIfChanged(file: string, text: string): void {
  try {
    if (readFileSync(file, "utf8") === text) return;
  } catch {
    // absent or unreadable: (re)write it
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic.sync(file, text, { mode: 0o600 });
}
