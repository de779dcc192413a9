// Finding every process an agent left, by what pu gave it rather than by name: each agent
// process (and anything it started, even detached into its own session, such as a
// `codex app-server`) inherits PU_AGENT_ID in its environment.
import { readdirSync, readFileSync } from "node:fs";
import { processStartTime } from "../helpers/pu-sandbox.js";

export interface AgentProcess {
  pid: number;
  /** From /proc/<pid>/stat, so a reused pid is never mistaken for the agent's. */
  startTime: string;
  command: string;
}

function readProc(pid: string, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

/** Live processes whose environment holds `PU_AGENT_ID=<agentId>`. */
export function processesOfAgent(agentId: string): AgentProcess[] {
  const needle = `PU_AGENT_ID=${agentId}`;
  const found: AgentProcess[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = readProc(entry, "environ");
    if (!environ?.split("\0").includes(needle)) continue;
    const stat = readProc(entry, "stat");
    // A zombie has exited; its parent just has not reaped it yet.
    if (!stat || stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z") continue;
    const pid = Number(entry);
    const startTime = processStartTime(pid);
    if (startTime === undefined) continue;
    found.push({ pid, startTime, command: (readProc(entry, "cmdline") ?? "").split("\0").join(" ").trim() });
  }
  return found;
}

/** The ones of `processes` that still run (same pid, same start time). */
export function stillRunning(processes: AgentProcess[]): AgentProcess[] {
  return processes.filter((p) => {
    const stat = readProc(String(p.pid), "stat");
    return stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z" && processStartTime(p.pid) === p.startTime;
  });
}
