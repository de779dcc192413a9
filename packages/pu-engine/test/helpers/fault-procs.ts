// Process facts for the fault tests, read straight from /proc so the assertions do
// not lean on the daemon's own process-info module (whose bugs they might share).
import { readFileSync, readdirSync } from "node:fs";

/** A small seeded PRNG (mulberry32): a failing storm can be replayed from its printed seed. */
export class Prng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[this.int(0, items.length - 1)] as T;
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = this.int(0, 255);
    return out;
  }
}

/** The seed from $PU_FAULT_SEED (to replay a failure), else a fresh one. */
export function faultSeed(): number {
  const fromEnv = Number.parseInt(process.env.PU_FAULT_SEED ?? "", 10);
  return Number.isInteger(fromEnv) ? fromEnv >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;
}

interface Stat {
  state: string;
  startTime: string;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // After the command name: field 3 (state) is fields[0], field 22 (starttime) is fields[19].
  return { state: fields[0] ?? "?", startTime: fields[19] ?? "" };
}

export function startTimeOf(pid: number): string | null {
  return readStat(pid)?.startTime ?? null;
}

/**
 * True when `pid` still runs the very process that had `startTime`: it answers
 * signal 0, is not a zombie, and its start time matches (pids get reused).
 */
export function isSameLiveProcess(pid: number, startTime: string | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readStat(pid);
  if (stat === null || stat.state === "Z") return false;
  return startTime === undefined || stat.startTime === startTime;
}

export interface AgentProcess {
  pid: number;
  startTime: string;
  agentId: string;
  cmdline: string;
}

/**
 * Every living process started for an agent of the daemon that uses `home`: the daemon
 * gives each agent PU_AGENT_ID and its own PU_HOME, and children inherit both. This
 * finds processes the manifest never heard of (e.g. a spawn cut short by a crash).
 */
export function agentProcessesOfHome(home: string): AgentProcess[] {
  const found: AgentProcess[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch {
      continue;
    }
    const vars = environ.split("\0");
    if (!vars.includes(`PU_HOME=${home}`)) continue;
    const agentVar = vars.find((v) => v.startsWith("PU_AGENT_ID="));
    if (!agentVar) continue;
    const stat = readStat(pid);
    if (stat === null || stat.state === "Z") continue;
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    } catch {
      // gone meanwhile
    }
    found.push({ pid, startTime: stat.startTime, agentId: agentVar.slice("PU_AGENT_ID=".length), cmdline });
  }
  return found;
}

/** SIGKILLs (by pid, start time checked) every agent process of `home` still alive; returns how many. */
export function killAgentProcessesOfHome(home: string): number {
  let killed = 0;
  for (const proc of agentProcessesOfHome(home)) {
    if (!isSameLiveProcess(proc.pid, proc.startTime)) continue;
    try {
      process.kill(proc.pid, "SIGKILL");
      killed++;
    } catch {
      // exited meanwhile
    }
  }
  return killed;
}

/** Resident set size of a process in bytes, from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}
