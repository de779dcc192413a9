// `$PU_HOME/remote-projects.json`: for each local project placed on a host, where its mirror is
// there, which agents and worktrees pu started in it, and the host's last status report of it —
// what `pu status` shows while the host cannot be reached, and what routes an id to its host
// after the control plane restarts. Written only by the daemon (locked, atomic).
import path from "node:path";
import { z } from "zod";
import { parseJsonText } from "./json-state.js";

const RemoteProjectSchema = z.object({
  host: z.string().min(1),
  /** The project on this machine. */
  projectRoot: z.string().min(1),
  /** Its mirror on the host (`hostMirrorPath`). */
  mirror: z.string().min(1),
  /** The local branch pushed as the mirror's base; merges of its worktrees land here. */
  baseBranch: z.string().min(1),
  agentIds: z.array(z.string()).default([]),
  worktreeIds: z.array(z.string()).default([]),
  /** Worktrees whose branch was merged into the local base (the host's record does not know). */
  merged: z.array(z.string()).default([]),
  /** The host's `status` report of the mirror, as last seen (a StatusReport; kept loose on purpose: the host may be newer). */
  lastReport: z.record(z.string(), z.unknown()).nullable().default(null),
  lastSeenAt: z.string().nullable().default(null),
  /**
   * Spawns asked of the host and not yet recorded (when each was asked): a control plane killed
   * before the host's answer was recorded finds the agent in the host's next report and adopts it.
   */
  spawning: z.array(z.string()).default([]),
});
export type RemoteProject = z.infer<typeof RemoteProjectSchema>;

const RemoteProjectsFileSchema = z.object({
  version: z.literal(1),
  projects: z.array(RemoteProjectSchema),
});
export type RemoteProjectsFile = z.infer<typeof RemoteProjectsFileSchema>;

export function remoteProjectsFilePath(home: string): string {
  return path.join(home, "remote-projects.json");
}

export function parseRemoteProjectsFile(text: string, filePath: string): RemoteProjectsFile {
  return parseJsonText(RemoteProjectsFileSchema, text, filePath, "CONFIG_ERROR");
}
