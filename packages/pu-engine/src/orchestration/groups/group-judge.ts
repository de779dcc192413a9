// What a group's judge is given: one file with the task, each finished member's output and its
// diff (cut to a size a model reads whole), and a prompt naming where the verdict goes.
import type { GroupRecord } from "@pu/core/group";

/** What one member's diff may take in the judge's materials. */
const JUDGE_DIFF_CHARS = 8000;

/** `patchOf`: a member's change as a unified diff ("" when there is none or it cannot be read). */
export async function judgeMaterials(group: GroupRecord, done: readonly string[], patchOf: (variant: string) => Promise<string>): Promise<string> {
  const parts = [`# Group ${group.group_id}: the members' work`, "", `Task given to every member:`, "", group.members[done[0] ?? ""]?.prompt ?? "", ""];
  for (const v of done) {
    const member = group.members[v];
    const result = group.individual_outputs?.[v];
    const patch = await patchOf(v);
    parts.push(
      `## Member ${v} (${member?.delegator_name ?? "?"})`,
      "",
      "### Output",
      "",
      result?.output || "(none)",
      "",
      `### Diff${patch.length > JUDGE_DIFF_CHARS ? ` (first ${JUDGE_DIFF_CHARS} characters)` : ""}`,
      "",
      "```diff",
      patch.slice(0, JUDGE_DIFF_CHARS) || "(no changes)",
      "```",
      "",
    );
  }
  return parts.join("\n");
}

export function judgePrompt(done: readonly string[], inputFile: string, verdictPath: string): string {
  return [
    `You judge ${done.length} attempts at one task (members ${done.join(", ")}).`,
    `Read ${inputFile}: it holds the task, each member's output and its diff.`,
    `Write your verdict as JSON to ${verdictPath}:`,
    `{"winner": "<member>", "ranking": ["<best>", "..."], "reasons": {"<member>": "<why>"}}`,
    "Change no other file.",
  ].join("\n");
}
