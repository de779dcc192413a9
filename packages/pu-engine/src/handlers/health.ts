import type { HealthResult, RequestOf } from "@pu/ipc/protocol";
import { DAEMON_VERSION, PROTOCOL_VERSION } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";

export async function handleHealth(state: EngineState, _req: RequestOf<"health">): Promise<HealthResult> {
  const held = [...state.sessions.values()];
  return {
    pid: process.pid,
    uptimeSeconds: Math.floor((Date.now() - state.startedAt) / 1000),
    protocolVersion: PROTOCOL_VERSION,
    daemonVersion: DAEMON_VERSION,
    home: state.home,
    agentCount: held.length,
    liveAgentCount: held.filter((a) => a.session.exitCode === null).length,
    projects: state.projects.list(),
  };
}
