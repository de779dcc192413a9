// Hosts: other places with a pu daemon of their own, reached through ssh or an exec prefix.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import type { HostRecord } from "@pu/core/hosts-file";
import { req } from "../fields.js";

const HostName = z.string().min(1).max(63);
const Transport = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("ssh"),
    destination: z.string().min(1).max(320),
    configFile: z.string().min(1).max(4096).optional(),
    options: z.array(z.string().max(1100)).max(64).default([]),
  }),
  z.object({ kind: z.literal("exec"), command: z.array(z.string().min(1).max(4096)).min(1).max(64) }),
]);

export const HostAddRequest = req("host_add", { name: HostName, transport: Transport, root: z.string().min(1).max(4096), maxAgents: z.number().int().min(1).max(1000).optional() });
export const HostListRequest = req("host_list", {});
/** Refused while pu holds agents or worktrees there, unless `force` (they are forgotten here, left on the host). */
export const HostRemoveRequest = req("host_remove", { name: HostName, force: z.boolean().optional() });
export const HostCheckRequest = req("host_check", { name: HostName });
/** `packedDir`: an absolute directory holding `scripts/pack.sh`'s tarballs. */
export const HostInstallRequest = req("host_install", { name: HostName, packedDir: z.string().min(1).max(4096) });

export interface HostCheck {
  name: string;
  transport: "ssh" | "exec";
  root: string;
  reachable: boolean;
  /** Reachable, nothing missing, and its daemon answered: agents can run there. */
  ready: boolean;
  /** Why it is unreachable, or why its daemon did not answer; null when all is well. */
  reason: string | null;
  node: string | null;
  git: string | null;
  /** `pu --version` on the host, and where that pu is (ROOT/bin/pu, else the PATH's). */
  pu: string | null;
  puPath: string | null;
  cores: number | null;
  freeDiskBytes: number | null;
  /** The host daemon's answer to pu's hello through `pu daemon stdio`. */
  daemon: { protocolVersion: number; daemonVersion: string; pid: number } | null;
  /** What the host lacks for running agents, each with what to do. */
  missing: string[];
  seconds: number;
}

/** The control plane's link to a host, and what pu placed there. */
export interface HostLinkView {
  state: "connected" | "unreachable" | "idle";
  since: string | null;
  reason: string | null;
  /** Agents pu placed there (every project) not known to have ended, from the host's fresh or last report. */
  agents: number;
}

export interface HostsResults {
  host_add: { host: HostRecord };
  /** `problems`: a state file pu cannot use (left as it is), one line each; absent when none. */
  host_list: { hosts: (HostRecord & { link: HostLinkView })[]; problems?: string[] };
  host_remove: { host: HostRecord };
  host_check: HostCheck;
  host_install: { installed: string[]; check: HostCheck };
}
