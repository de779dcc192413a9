// How long a client waits for a request's reply unless the caller says otherwise: only the
// requests that may take long are listed; the others use the connection's default. Kept
// apart from the schemas (requests/*.ts) because the CLI reads it on every run and must
// not load zod to do so.
import type { RequestType } from "./protocol.js";

export const REQUEST_TIMEOUTS_MS: Partial<Record<RequestType, number>> = {
  spawn: 120_000,
  // Reaching a host through ssh or exec, twice (the probe, then pu's handshake).
  host_check: 90_000,
  // Copies the tarballs and runs npm on the host (node-pty compiles there).
  host_install: 0,
  resume: 120_000,
  kill: 120_000,
  suspend: 120_000,
  diff: 120_000,
  merge: 300_000,
  clean: 300_000,
  attach: 30_000,
  subscribe_status: 30_000,
  // A swarm starts many agents; a gate runs as long as its check does.
  run_swarm: 0,
  gate: 0,
  // Starting a plan creates its branch and files; a check runs as long as its command does.
  plan_start: 60_000,
  plan_cancel: 120_000,
  plan_check: 0,
  plan_merge: 300_000,
  ticket_cancel: 120_000,
  // Starting a group checks its agent types; cancel stops every member; pick merges and cleans.
  group_run: 60_000,
  group_cancel: 120_000,
  group_diff: 120_000,
  group_pick: 300_000,
};
