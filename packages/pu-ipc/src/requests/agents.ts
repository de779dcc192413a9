// Agents: starting, watching, reading, typing into, stopping and resuming them.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import type { AgentEntry, AgentStatus, WorktreeEntry } from "@pu/core/manifest";
import type { WaitingReason } from "@pu/core/status";
import type { WorkOwnerView } from "./worktrees.js";
import type { AgentBudgetView, UsageFigures } from "./usage.js";
import { Bytes, ProjectRoot, AgentId, Name, Vars, Text, TerminalSide, req } from "../fields.js";

export const SpawnRequest = req("spawn", {
  projectRoot: ProjectRoot,
  prompt: Text.optional(),
  agent: Name.optional(),
  name: Name.optional(),
  base: Name.optional(),
  root: z.boolean().optional(),
  worktree: Name.optional(),
  command: Text.optional(),
  template: Name.optional(),
  vars: Vars.optional(),
  planMode: z.boolean().optional(),
  /** Launch mode "yolo": the agent type's unattended flags (e.g. Claude's skip-permissions). */
  yolo: z.boolean().optional(),
  trigger: Name.optional(),
  noTrigger: z.boolean().optional(),
  extraArgs: z.array(z.string().max(65536)).max(256).optional(),
  /** Added to the agent's environment (which is otherwise the daemon's). */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").max(256), z.string().max(65536)).optional(),
  cols: TerminalSide.optional(),
  rows: TerminalSide.optional(),
  // Set by the CLI when it runs inside a pu agent (PU_AGENT_ID); informational.
  callerAgentId: AgentId.optional(),
  /** A host's name (`pu host add`): the agent runs there, in the project's mirror. */
  on: z.string().min(1).max(63).optional(),
  /**
   * Files written into the new worktree before the agent starts, at paths relative to it: the
   * project's env files, sent by a control plane that placed the agent on this host.
   */
  files: z.array(z.object({ path: z.string().min(1).max(1024), data: Bytes })).max(64).optional(),
  /** Budget: pu interrupts the agent's turn once its tokens (all the provider reported) reach this. */
  maxTokens: z.number().int().positive().optional(),
  /** Budget in US dollars, at the prices pu knows (`prices` in config). */
  maxCost: z.number().positive().max(1_000_000).optional(),
});
export const StatusRequest = req("status", { projectRoot: ProjectRoot, agentId: AgentId.optional() });
export const SubscribeStatusRequest = req("subscribe_status", { projectRoot: ProjectRoot });
// target: an agent id, a worktree id, "worktrees" (every worktree agent) or "all" (also root agents).
export const KillRequest = req("kill", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64),
  exclude: z.array(AgentId).max(10_000).optional(),
  callerAgentId: AgentId.optional(),
  /** Also agents a running ticket, group or plan owns (otherwise skipped, or refused when named). */
  force: z.boolean().optional(),
});
// target: an agent id or "all".
export const SuspendRequest = req("suspend", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64),
  callerAgentId: AgentId.optional(),
});
export const ResumeRequest = req("resume", { projectRoot: ProjectRoot, agentId: AgentId });
export const LogsRequest = req("logs", {
  agentId: AgentId,
  tail: z.number().int().min(0).optional(),
  /** The rendered screen (`screen` in the reply) instead of raw bytes. */
  screen: z.boolean().optional(),
});
/** Text typed the way the agent's CLI accepts it (see deliverPrompt), then Enter unless `submit` is false. */
export const TypeTextRequest = req("type_text", { agentId: AgentId, text: Text, submit: z.boolean().default(true) });
/** An agent CLI's hook reporting its turn state (`pu signal`, run by the hook with PU_AGENT_ID). */
export const AgentSignalRequest = req("agent_signal", { agentId: AgentId, signal: z.enum(["busy", "turn_end", "permission"]) });
export const AttachRequest = req("attach", { agentId: AgentId, fromOffset: z.number().int().min(0).optional() });
export const InputRequest = req("input", { agentId: AgentId, data: Bytes });
export const ResizeRequest = req("resize", {
  agentId: AgentId,
  cols: TerminalSide,
  rows: TerminalSide,
});
export const RenameRequest = req("rename", {
  projectRoot: ProjectRoot,
  target: z.string().min(1).max(64), // agent id or worktree id
  name: Name,
});


/** An agent as `status` reports it: every manifest field, `status` computed live. */
export type AgentView = AgentEntry & {
  /** The last status written to the manifest (status above is the live one). */
  storedStatus: AgentStatus;
  /** Why the agent is waiting; present exactly when the live status is `waiting`. */
  waitingReason?: WaitingReason;
  /** Seconds since the last meaningful output; null when the daemon has no live process. */
  idleSeconds: number | null;
  /** The daemon holds this agent's PTY right now. */
  live: boolean;
  worktreeId?: string;
  /** The lowest non-empty row of the agent's rendered screen (while the daemon holds its PTY). */
  lastScreenLine?: string;
  /** A hash of the screen's visible text: equal hashes, same text. */
  contentHash?: string;
  /** When the screen's visible text last changed (ISO time); absent while it never showed any. */
  lastContentChange?: string;
  /** The host the agent runs on (absent: this machine). */
  host?: string;
  /** Whether that host answered now; when `unreachable`, everything else is as last seen (`hostSeenAt`). */
  hostState?: "connected" | "unreachable";
  hostSeenAt?: string | null;
  /** Tokens and cost its CLI recorded; null when pu found no record of them (unknown, not 0). */
  usage?: UsageFigures | null;
  budget?: AgentBudgetView;
};
// Not Omit<WorktreeEntry, "agents">: the entry type keeps unknown keys (an index
// signature), and Omit over an index signature erases the named fields.
export type WorktreeView = WorktreeEntry & { agents: Record<string, AgentView>; host?: string };
export interface StatusReport {
  projectRoot: string;
  worktrees: Record<string, WorktreeView>;
  agents: Record<string, AgentView>;
  createdAt: string;
  updatedAt: string;
  /** State files pu cannot use for this report (left as they are), one line each; absent when none. */
  problems?: string[];
}
export interface SpawnResult {
  agentId: string;
  worktreeId?: string;
  worktreePath?: string;
  branch?: string;
  cwd: string;
  agent: AgentEntry;
  /** The host it runs on (absent: this machine); `cwd` and `worktreePath` are paths there. */
  host?: string;
  /** Non-fatal notes, e.g. template variables that were not supplied. */
  warnings: string[];
}
export interface KillResult {
  killed: { agentId: string; exitCode: number | null }[];
  /** Agents left alone: not running, excluded, or owned by a running ticket, group or plan (`owner`). */
  skipped: { agentId: string; reason: string; owner?: WorkOwnerView }[];
  /** With target "worktrees": root agents still running, which only "all" (`--include-root`) stops. */
  rootAgentsLeft?: number;
  /** Agents or worktrees on hosts this request could not include (remote-projects.json unreadable), one line each; absent when none. */
  problems?: string[];
}
export interface SuspendResult {
  suspended: string[];
  skipped: { agentId: string; reason: string }[];
  /** Agents or worktrees on hosts this request could not include (remote-projects.json unreadable), one line each; absent when none. */
  problems?: string[];
}
/** An agent's terminal as a person would see it now (`logs` with `screen: true`). */
export interface ScreenView {
  cols: number;
  rows: number;
  /** One string per screen row, top to bottom, trailing blanks removed. */
  lines: string[];
  /** 0-based column and row of the cursor. */
  cursor: { x: number; y: number };
  alternateScreen: boolean;
  /** The window title the program set, or "". */
  title: string;
  contentHash: string;
  /** ISO time the visible text last changed; null while nothing was ever drawn. */
  lastContentChange: string | null;
  /** Output bytes a flood went past without the screen model parsing them. */
  skippedBytes: number;
}
export interface LogsResult {
  /** Raw output; empty when the screen was asked for. */
  data: Uint8Array;
  /** Byte offset of data[0] in the agent's whole output. */
  offset: number;
  endOffset: number;
  exited: boolean;
  exitCode?: number;
  screen?: ScreenView;
}
export interface AttachResult {
  agentId: string;
  /** Where the replay starts (may be later than fromOffset when the ring no longer holds it). */
  offset: number;
  endOffset: number;
  cols: number;
  rows: number;
  exited: boolean;
  exitCode?: number;
}

export interface AgentsResults {
  spawn: SpawnResult;
  status: StatusReport;
  subscribe_status: StatusReport;
  kill: KillResult;
  suspend: SuspendResult;
  resume: { agent: AgentEntry };
  logs: LogsResult;
  attach: AttachResult;
  input: { bytes: number };
  type_text: { bytes: number };
  agent_signal: { agentId: string; status: AgentStatus; waitingReason?: WaitingReason };
  resize: { cols: number; rows: number };
  rename: { target: string; name: string };
}
