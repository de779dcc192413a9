/**
 * Facts about processes read from /proc (Linux), and signalling whole process
 * groups. Agents run as session + process-group leaders (node-pty calls
 * setsid), so an agent's pid is also its pgid and sid.
 */
import { readFileSync, readdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

interface ProcStat {
  state: string;
  pgrp: number;
  session: number;
  startTime: string;
}

/**
 * Parses /proc/<pid>/stat. The command name (field 2) is in parentheses and may
 * itself contain spaces and ')', so fields are counted after the LAST ')'.
 */
function readStat(pid: number): ProcStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  // fields[0] is field 3 (state), so field N is fields[N - 3].
  const fields = text.slice(close + 1).trim().split(/\s+/);
  const startTime = fields[22 - 3];
  const state = fields[0];
  if (startTime === undefined || state === undefined) return null;
  return { state, pgrp: Number(fields[5 - 3]), session: Number(fields[6 - 3]), startTime };
}

/** Start time of a process in clock ticks since boot (field 22), or null if it is gone. */
export function processStartTime(pid: number): string | null {
  return readStat(pid)?.startTime ?? null;
}

/** True when `pid` still names the process that had `startTime` (not a reused pid). */
export function isSameProcess(pid: number, startTime: string): boolean {
  const current = processStartTime(pid);
  return current !== null && current === startTime;
}

/** True when the process exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errnoOf(err) !== "EPERM") return false;
  }
  // A zombie has exited; it only waits to be reaped (possibly never, in a container).
  const stat = readStat(pid);
  return stat === null ? true : stat.state !== "Z";
}

/**
 * Living (non-zombie) processes that belong to process group `pgid` or session
 * `pgid`. Jobs an interactive shell started get their own process group but stay
 * in the agent's session, so both are counted.
 */
function processGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return members;
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const stat = readStat(pid);
    if (stat && stat.state !== "Z" && (stat.pgrp === pgid || stat.session === pgid)) members.push(pid);
  }
  return members;
}

/**
 * Sends `signal` to process group `pid`; if the group is gone, to the pid
 * itself. Returns false when neither exists. Vanished processes are not errors.
 */
export function killProcessGroup(pid: number, signal: NodeJS.Signals | number): boolean {
  if (!Number.isInteger(pid) || pid <= 1) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch (err) {
    if (errnoOf(err) !== "ESRCH") throw err;
  }
  try {
    process.kill(pid, signal);
    return true;
  } catch (err) {
    if (errnoOf(err) !== "ESRCH") throw err;
    return false;
  }
}

/** Signals the group and every straggler of the session (see processGroupMembers). */
export function killProcessTree(pid: number, signal: NodeJS.Signals | number): void {
  killProcessGroup(pid, signal);
  for (const member of processGroupMembers(pid)) {
    try {
      process.kill(member, signal);
    } catch {
      // Exited meanwhile, or not ours to signal: nothing more we can do.
    }
  }
}

/** Polls until no living member of group/session `pgid` is left, or `deadline` (epoch ms) passes. */
export async function waitForGroupGone(pgid: number, deadline: number, pollMs = 50): Promise<boolean> {
  for (;;) {
    if (processGroupMembers(pgid).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
  }
}

/**
 * Stops a process group that is NOT our child (e.g. left behind by a daemon that
 * died): SIGTERM, wait up to `graceMs` for it to go, then SIGKILL.
 */
export async function terminateProcessGroup(
  pid: number,
  { graceMs = 5000 }: { graceMs?: number } = {},
): Promise<"exited" | "killed"> {
  killProcessTree(pid, "SIGTERM");
  if (await waitForGroupGone(pid, Date.now() + graceMs)) return "exited";
  killProcessTree(pid, "SIGKILL");
  // SIGKILL cannot be ignored, but delivery and teardown still take a moment.
  await waitForGroupGone(pid, Date.now() + 2000);
  return "killed";
}

/**
 * Stops one process that is not our child and leads no group: SIGTERM, up to `graceMs`, then
 * SIGKILL. Each signal goes only while the pid still names the process first seen (its start
 * time), so a pid reused meanwhile is never hit.
 */
export async function terminateProcess(pid: number, { graceMs = 5000 }: { graceMs?: number } = {}): Promise<"exited" | "killed" | "gone"> {
  const startTime = processStartTime(pid);
  if (startTime === null) return "gone";
  // Still the process first seen, and not yet a zombie (one that has exited and awaits its parent).
  const running = () => {
    const stat = readStat(pid);
    return stat !== null && stat.startTime === startTime && stat.state !== "Z";
  };
  const signal = (s: NodeJS.Signals) => {
    if (!running()) return false;
    try {
      process.kill(pid, s);
      return true;
    } catch {
      return false; // already gone
    }
  };
  if (!signal("SIGTERM")) return "gone";
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!running()) return "exited";
    await sleep(50);
  }
  return signal("SIGKILL") ? "killed" : "exited";
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}
