import type { ScheduleDefinition } from "@pu/core/definitions";
import { Command } from "../../clipanion.js";
import { DefinitionShowCommand, NOUNS, oneLine } from "../../definition-commands.js";

export default class ScheduleShowCommand extends DefinitionShowCommand {
  static override paths = [["schedule", "show"]];
  static override usage = Command.Usage({
    description: "Print a schedule and what it starts when",
    details: "`pu schedule list` also shows the next run the daemon has computed and any missed runs.",
    examples: [
      ["Show a schedule", "$0 schedule show nightly"],
      ["As JSON (text and parsed form)", "$0 schedule show nightly --json"],
    ],
  });
  readonly noun = NOUNS.schedule;

  summarize(parsed: unknown): string[] {
    const s = parsed as ScheduleDefinition;
    const target = s.trigger.agentDef !== undefined
      ? `agent definition ${s.trigger.agentDef}`
      : s.trigger.swarm !== undefined
        ? `swarm ${s.trigger.swarm}`
        : `${s.trigger.agent ?? "claude"} with "${oneLine(s.trigger.inlinePrompt ?? "")}"`;
    const where = s.trigger.swarm !== undefined ? "" : s.root ? " in the project root" : s.worktree !== undefined ? ` in worktree ${s.worktree}` : " in a new worktree";
    return [
      `enabled: ${s.enabled ? "yes" : "no"}`,
      `recurrence: ${s.recurrence} from ${s.startAt}${s.timeZone ? ` (${s.timeZone})` : ""}`,
      `starts: ${target}${where}`,
      `last run: ${s.lastRun ?? "never"}`,
    ];
  }
}
