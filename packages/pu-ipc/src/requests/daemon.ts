// Daemon-wide requests: the handshake, health, shutdown, making a project, trusting its `.pu/`.
// Each request: its schema and its result (default client timeouts: request-timeouts.ts).
import { z } from "zod";
import { ProjectRoot, req } from "../fields.js";

export const HelloRequest = req("hello", { protocolVersion: z.number().int(), client: z.string().max(256) });
export const HealthRequest = req("health", {});
export const ShutdownRequest = req("shutdown", {});
export const InitRequest = req("init", { projectRoot: ProjectRoot });
export const TrustRequest = req("trust", {
  projectRoot: ProjectRoot,
  /** List what the project's `.pu/` would run and whether it is trusted, without recording anything. */
  showOnly: z.boolean().optional(),
  /** A host's name: the project's mirror there (what its daemon runs), not this machine's copy. */
  on: z.string().min(1).max(63).optional(),
});


export interface HealthResult {
  pid: number;
  uptimeSeconds: number;
  protocolVersion: number;
  daemonVersion: string;
  home: string;
  agentCount: number;
  liveAgentCount: number;
  projects: string[];
  /** State files of the daemon's own it cannot use (one line each, naming the file): `pu daemon status` prints them. */
  problems?: string[];
}
export interface HelloAck {
  protocolVersion: number;
  daemonVersion: string;
  pid: number;
}
export interface TrustResult {
  /** Every command-bearing item of the project's `.pu/`, with whether it was trusted before this request. */
  items: { key: string; file: string; runs: string; trusted: boolean }[];
  /** How many items this request trusted (0 with `showOnly`). */
  recorded: number;
}

export interface DaemonResults {
  hello: HelloAck;
  health: HealthResult;
  shutdown: { stopping: true };
  init: { created: boolean; projectRoot: string; manifestPath: string };
  trust: TrustResult;
}
