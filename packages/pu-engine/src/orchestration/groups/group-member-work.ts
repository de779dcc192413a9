// What a finished member leaves, read the same way whoever asks: its output (the file it wrote,
// else its last screen lines), its work committed and counted, and its change as a patch for
// the judge — from its worktree here, or from its host.
import { readFile } from "node:fs/promises";
import { loadConfig } from "@pu/core/config";
import type { DiffStat, GroupRecord, MemberResult } from "@pu/core/group";
import { textTail } from "@pu/core/prompt-text";
import { lastScreenLines } from "../../agents/turn.js";
import { commitAllChanges } from "../../git/commit.js";
import { diffWorktree } from "../../git/diff.js";
import type { HostMembers } from "../../hosts/host-members.js";
import type { DaemonLog } from "../../daemon-log.js";
import type { LiveAgent } from "../../session/live-agent.js";
import { memberOutputFile } from "./group-files.js";

/** What one member's output may take in state.json and in the judge's materials. */
const OUTPUT_CHARS = 4000;
/** A member with no output file: the last lines of its screen stand for its output. */
const SCREEN_LINES = 20;

export async function memberOutput(group: GroupRecord, variant: string, live: LiveAgent | undefined): Promise<Pick<MemberResult, "output" | "output_source">> {
  let output = "";
  let source: MemberResult["output_source"] = "none";
  try {
    output = (await readFile(memberOutputFile(group.project, group.group_id, variant), "utf8")).trim();
    if (output) source = "file";
  } catch {
    // no output file: the last screen lines
  }
  if (!output && live) {
    output = await lastScreenLines(live, SCREEN_LINES);
    if (output) source = "screen";
  }
  return { output: textTail(output, OUTPUT_CHARS), output_source: source };
}

/**
 * pu commits what the member left here (nothing is lost when its worktree is cleaned), then counts
 * the change. Members sharing a worktree leave it to its owner — unless a control plane placed the
 * member here (a ticket's step on this host): only commits travel back to it.
 */
export async function commitAndDiffStat(group: GroupRecord, variant: string, log: DaemonLog): Promise<DiffStat | null> {
  const member = group.members[variant];
  if ((group.settings.shared_worktree && !group.settings.placed_by) || !member?.worktree_path || !member.branch) return null;
  try {
    const config = await loadConfig(group.project);
    await commitAllChanges(member.worktree_path, `group ${group.group_id}: ${variant}`, config.envFiles);
    const base = group.settings.base_branch;
    if (!base) return null;
    const changes = await diffWorktree({ path: member.worktree_path, branch: member.branch, baseBranch: base, stat: true, envFiles: config.envFiles });
    return { files: changes.files.length, insertions: changes.insertions, deletions: changes.deletions };
  } catch (err) {
    log.event("group_diff_failed", { projectRoot: group.project, groupId: group.group_id, variant, error: err });
    return null;
  }
}

/** A member's change for the judge: computed here, or on its host ("" when there is none or it cannot be read). */
export async function memberPatch(group: GroupRecord, variant: string, hostMembers: HostMembers | undefined): Promise<string> {
  const member = group.members[variant];
  const base = group.settings.base_branch;
  if (!member || !base || group.settings.shared_worktree) return "";
  try {
    if (member.host) return member.worktree_id ? ((await hostMembers?.diff(member.worktree_id, false))?.patch ?? "") : "";
    if (!member.worktree_path || !member.branch) return "";
    const { envFiles } = await loadConfig(group.project);
    return (await diffWorktree({ path: member.worktree_path, branch: member.branch, baseBranch: base, envFiles })).patch ?? "";
  } catch {
    return "";
  }
}
