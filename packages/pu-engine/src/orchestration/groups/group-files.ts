// Where a group's files live: `.pu/groups/<id>/` holds each member's output file, the
// judge's materials and its verdict. Outside every worktree, so no member's diff shows them.
import path from "node:path";
import { variantSlug } from "@pu/core/group";
import { puDir } from "@pu/core/paths";

export function groupDir(root: string, groupId: string): string {
  return path.join(puDir(root), "groups", groupId);
}

export function memberOutputFile(root: string, groupId: string, variant: string): string {
  return path.join(groupDir(root, groupId), `${variantSlug(variant)}.md`);
}

export function judgeInputFile(root: string, groupId: string): string {
  return path.join(groupDir(root, groupId), "judge-input.md");
}

export function verdictFile(root: string, groupId: string): string {
  return path.join(groupDir(root, groupId), "verdict.json");
}
