// Worktrees: what they changed, merging them, cleaning them up.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import type { WorktreeEntry } from "@pu/core/manifest";
import { ProjectRoot, AgentId, req } from "../fields.js";

export const DiffRequest = req("diff", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().max(64).optional(),
  stat: z.boolean().optional(),
});
export const MergeRequest = req("merge", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().min(1).max(64),
  strategy: z.enum(["merge", "squash", "ff-only"]).default("merge"),
  message: z.string().max(65536).optional(),
});
export const CleanRequest = req("clean", {
  projectRoot: ProjectRoot,
  worktreeId: z.string().max(64).optional(),
  all: z.boolean().optional(),
  /** Remove even uncommitted files and commits the base branch lacks (the reply lists them). */
  force: z.boolean().optional(),
  callerAgentId: AgentId.optional(),
});


export interface DiffFile {
  path: string;
  insertions: number;
  deletions: number;
  binary?: boolean;
}
export interface WorktreeDiff {
  worktreeId: string;
  name: string;
  branch: string;
  baseBranch: string;
  mergeBase: string;
  files: DiffFile[];
  insertions: number;
  deletions: number;
  /** Unified diff text; omitted in stat mode. */
  patch?: string;
  /** Why this worktree could not be diffed (its directory or branch is gone); the others still are. */
  error?: string;
}
export interface DiffResult {
  worktrees: WorktreeDiff[];
  /** Agents or worktrees on hosts this request could not include (remote-projects.json unreadable), one line each; absent when none. */
  problems?: string[];
}
export interface MergeResult {
  worktreeId: string;
  status: WorktreeEntry["status"];
  strategy: "merge" | "squash" | "ff-only";
  baseBranch: string;
  commit?: string;
  /** The branch had no commit its base lacks: nothing was merged and the worktree stays as it was. */
  nothingToMerge?: boolean;
}
export interface CleanResult {
  cleaned: {
    worktreeId: string;
    killedAgents: string[];
    removedPath: boolean;
    deletedBranch: boolean;
    notes: string[];
    /** What `force` threw away. */
    discarded?: WorkAtRiskView;
  }[];
  /** Worktrees `all` left in place because removing them would lose work, or because a running ticket, group or plan owns them. */
  kept: ({ worktreeId: string; name: string; reason: string; owner?: WorkOwnerView } & WorkAtRiskView)[];
  /** Agents or worktrees on hosts this request could not include (remote-projects.json unreadable), one line each; absent when none. */
  problems?: string[];
}
/** What owns a worktree or agent that `pu clean` / `pu kill` left alone; its cancel lets go of it. */
export interface WorkOwnerView {
  kind: "ticket" | "group" | "plan";
  id: string;
}
export interface WorkAtRiskView {
  uncommittedFiles: string[];
  unmergedCommits: number;
}

export interface WorktreesResults {
  diff: DiffResult;
  merge: MergeResult;
  clean: CleanResult;
}
