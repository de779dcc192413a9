/**
 * Agent processes of a dead daemon that no manifest records. A crash between
 * starting an agent's PTY and writing its manifest entry (spawn, resume) leaves a
 * process recovery cannot find by pid; it is found by the environment every
 * agent gets instead: `PU_HOME` of its daemon and its own `PU_AGENT_ID`.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { isAgentId } from "@pu/core/ids";

export interface StrayAgent {
  pid: number;
  agentId: string;
  /** A PTY's session leader (the agent itself) rather than something it started (`nohup`, a dev server). */
  leader: boolean;
}

/** ppid and session id from /proc/<pid>/stat (fields 4 and 6, counted after the last ')'). */
function parentAndSession(pid: number): { ppid: number; session: number; zombie: boolean } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(")") + 1).trim().split(/\s+/);
  return { ppid: Number(fields[1]), session: Number(fields[3]), zombie: fields[0] === "Z" };
}

function ancestorsOf(pid: number): Set<number> {
  const found = new Set<number>();
  for (let at = parentAndSession(pid)?.ppid; at !== undefined && at > 1 && !found.has(at); at = parentAndSession(at)?.ppid) {
    found.add(at);
  }
  return found;
}

/** A living process started for the daemon owning `home` (its `PU_HOME` in its environment). */
interface HomeProcess {
  pid: number;
  session: number;
  environ: string[];
}

/**
 * Every living process whose environment carries `PU_HOME=home`, less this process, its own
 * children and its ancestors: a `pu` run inside an agent that found no daemon started this one,
 * so it and whatever ran it carry the agent's environment, but they are waiting for us.
 * `accept(pid)` looks first at what is cheaper to read than the environment.
 */
function* processesOfHome(home: string, accept: (pid: number) => boolean = () => true): Generator<HomeProcess> {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return;
  }
  const homeVar = `PU_HOME=${home}`;
  const ancestors = ancestorsOf(process.pid);
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || ancestors.has(pid)) continue;
    try {
      if (!accept(pid)) continue;
      const stat = parentAndSession(pid);
      if (!stat || stat.zombie || stat.ppid === process.pid) continue;
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (environ.includes(homeVar)) yield { pid, session: stat.session, environ };
    } catch {
      // gone, or not ours to read
    }
  }
}

/**
 * Living processes started for the daemon owning `home`: agents (session leaders: node-pty
 * calls setsid) and whatever they started that outlived them (a `nohup` child, a dev server:
 * they inherit the agent's environment). Only one daemon may own a home, so while it starts up
 * every such process is an orphan.
 */
export function findStrayAgents(home: string): StrayAgent[] {
  const strays: StrayAgent[] = [];
  for (const { pid, session, environ } of processesOfHome(home)) {
    const agentId = environ.find((v) => v.startsWith("PU_AGENT_ID="))?.slice("PU_AGENT_ID=".length);
    if (agentId !== undefined && isAgentId(agentId)) strays.push({ pid, agentId, leader: session === pid });
  }
  return strays;
}

/**
 * git processes a dead daemon of `home` left running with their working directory in one of
 * `dirs` (a merge waiting on a slow hook). The daemon's own git children carry its `PU_HOME` and
 * no `PU_AGENT_ID` (an agent's git carries its id). Found only to be waited for, never stopped:
 * one that is a person's (a shell that exports the same PU_HOME) costs a bounded wait, nothing else.
 */
export function findOrphanGits(home: string, dirs: string[]): number[] {
  const roots = dirs.map((d) => path.resolve(d));
  const found: number[] = [];
  const isGit = (pid: number) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "git";
  for (const { pid, environ } of processesOfHome(home, isGit)) {
    if (environ.some((v) => v.startsWith("PU_AGENT_ID="))) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (roots.some((r) => cwd === r || cwd.startsWith(r + path.sep))) found.push(pid);
    } catch {
      // gone
    }
  }
  return found;
}
