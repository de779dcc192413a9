// What a member of a group is started with on this machine: its agent type and model (from its
// delegator), its prompt (told, after a daemon restart, that its worktree kept its work), where it
// runs (its own worktree, the one it had, or the group's shared one) and its environment.
import { modelArgs } from "@pu/core/argv-value";
import { parseDelegator, variantSlug, type GroupRecord } from "@pu/core/group";
import type { LaunchPlacement, LaunchDescription } from "../../agents/launcher.js";
import { pathWithPuCli } from "../../pu-cli-path.js";
import { memberOutputFile } from "./group-files.js";

function memberPlacement(group: GroupRecord, variant: string): LaunchPlacement {
  const settings = group.settings;
  if (settings.shared_worktree) return { kind: "worktree", worktree: settings.shared_worktree };
  const member = group.members[variant];
  if (member?.worktree_id) return { kind: "worktree", worktree: member.worktree_id };
  return { kind: "new", name: `group-${group.group_id.replace(/^g-/, "")}-${variantSlug(variant)}`, ...(settings.base_branch ? { base: settings.base_branch } : {}) };
}

/** The launch of `variant` (`restarted`: it had an agent before the daemon stopped), and its model. */
export function memberLaunch(group: GroupRecord, variant: string, restarted: boolean): { request: LaunchDescription; model: string | undefined } {
  const member = group.members[variant]!;
  const { agentType, model } = parseDelegator(member.delegator_name);
  const prompt = restarted ? `${member.prompt}\n\n(pu: your previous session ended with the daemon; your worktree keeps what you did. Finish the task.)` : member.prompt;
  const request: LaunchDescription = {
    projectRoot: group.project,
    agentType,
    prompt,
    placement: memberPlacement(group, variant),
    env: {
      ...group.settings.placed_by?.env,
      PU_GROUP_ID: group.group_id,
      PU_VARIANT_KEY: variant,
      PU_OUTPUT_FILE: memberOutputFile(group.project, group.group_id, variant),
      PATH: pathWithPuCli(),
    },
    ...(model !== undefined && agentType !== "terminal" ? { extraArgs: modelArgs(model) } : {}),
  };
  return { request, model };
}
