import { Command } from "../../clipanion.js";
import type { DefinitionSummary } from "@pu/ipc/protocol";
import { DefinitionListCommand, NOUNS, columnLines } from "../../definition-commands.js";

export default class ScheduleListCommand extends DefinitionListCommand {
  static override paths = [["schedule", "list"]];
  static override usage = Command.Usage({
    description: "List schedules with their timing (enabled, recurrence, next and last run, missed runs)",
    details: "A project's schedule hides a global one of the same name; only the project's own schedules fire. MISSED counts runs that fell due while the daemon was not running; HELD (shown when there are some) counts runs not fired because the schedule is not trusted yet (`pu trust`). A project's schedule that is not trusted never runs: NEXT RUN says not before `pu trust`, with the time the daemon next expects it to fall due (to be held, not run; pu does not write its file, so a nextRun the file carries is not what is shown), and a `held:` line below says why. When .pu/schedule-state.json cannot be read, MISSED shows ? and a `problem:` line names the file (pu leaves it as it is).",
    examples: [
      ["List them", "$0 schedule list"],
      ["As JSON", "$0 schedule list --json"],
    ],
  });
  readonly noun = NOUNS.schedule;

  override tableLines(definitions: DefinitionSummary[]): string[] {
    // HELD (runs not fired because the schedule is not trusted yet) only when there are some.
    const anyHeld = definitions.some((d) => typeof d.details?.heldRuns === "number");
    // .pu/schedule-state.json unreadable: its counts are unknown ("?", not 0), and one line says why.
    const stateProblems = [...new Set(definitions.map((d) => d.details?.stateProblem).filter((p): p is string => typeof p === "string"))];
    const table = columnLines(
      ["NAME", "SCOPE", "ENABLED", "RECURRENCE", "NEXT RUN", "LAST RUN", "MISSED", ...(anyHeld ? ["HELD"] : [])],
      definitions.map((d) => {
        if (d.error !== undefined) return [d.name, d.scope, "", "", "", "", `invalid: ${d.error}`, ...(anyHeld ? [""] : [])];
        const info = d.details ?? {};
        // A global schedule is a pattern to copy: the daemon never fires it by itself.
        // Not trusted: it will not run, whatever time comes (the daemon counts it as held).
        const untrusted = typeof info.untrusted === "string";
        const next = info.fires === false ? "(global: never fires)" : untrusted && info.enabled !== false ? `not before \`pu trust\`${typeof info.nextRun === "string" ? ` (due ${info.nextRun})` : ""}` : text(info.nextRun, "-");
        const held = typeof info.heldRuns === "number" ? `${info.heldRuns} (not trusted: run \`pu trust\`)` : "";
        const missed = typeof info.stateProblem === "string" ? "?" : text(info.missedRuns, "0");
        return [d.name, d.scope, info.enabled === false ? "no" : "yes", text(info.recurrence, "?"), next, text(info.lastRun, "never"), missed, ...(anyHeld ? [held] : [])];
      }),
    );
    const held = definitions.filter((d) => typeof d.details?.untrusted === "string").map((d) => `held: ${d.name}: ${String(d.details!.untrusted)}`);
    return [...table, ...held, ...stateProblems.map((problem) => `problem: ${problem}`)];
  }
}

function text(value: unknown, fallback: string): string {
  return value === null || value === undefined || value === "" ? fallback : String(value);
}
