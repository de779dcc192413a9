// The hosts this daemon (the control plane) knows: `$PU_HOME/hosts.json`, written here only
// (locked, atomic), and `check`: is the host reachable through its transport, what does it have
// (node, git, pu, cores, free disk under its root), and does its pu daemon answer pu's own
// handshake through `pu daemon stdio`. Every remote argument is quoted by pu-core or passed as
// argv; nothing a person typed becomes shell syntax on either side.
import { readdir } from "node:fs/promises";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { hostsFilePath, newHostRecord, parseHostsFile, transportArgv, type HostRecord, type HostsFile, type HostTransport } from "@pu/core/hosts-file";
import { LockedFile, readTextIfExists } from "@pu/core/locked-file";
import type { HostCheck } from "@pu/ipc/protocol";
import type { DaemonLog } from "../daemon-log.js";
import { openHostBridge } from "./host-links.js";
import { lastLine, run } from "./run-command.js";

const CHECK_TIMEOUT_MS = 30_000;
const MIN_NODE_MAJOR = 20;

/**
 * Runs on the host under /bin/sh with the host's root as $1: one `key=value` line per fact.
 * Fixed text; the root arrives as an argument, never spliced in.
 */
const PROBE_SCRIPT = [
  'printf "node=%s\\n" "$(node --version 2>/dev/null)"',
  'printf "git=%s\\n" "$(git --version 2>/dev/null)"',
  'if [ -x "$1/bin/pu" ]; then p="$1/bin/pu"; else p="$(command -v pu 2>/dev/null)"; fi',
  'printf "pu_path=%s\\n" "$p"',
  'if [ -n "$p" ]; then printf "pu=%s\\n" "$("$p" --version 2>/dev/null)"; fi',
  'printf "cores=%s\\n" "$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)"',
  'd="$1"; while [ ! -d "$d" ]; do d="$(dirname "$d")"; done',
  'printf "disk_kb=%s\\n" "$(df -Pk "$d" 2>/dev/null | awk "NR==2{print \\$4}")"',
].join("\n");

/** Runs on the host with its root as $1: installs the uploaded tarballs under ROOT/prefix, links ROOT/bin/pu. */
const INSTALL_SCRIPT = [
  "set -e",
  'cd "$1/packages"',
  // node-pty compiles against Node's headers; a distribution's Node ships them in /usr.
  'if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi',
  'npm install -g --prefix "$1/prefix" --no-fund --no-audit --no-update-notifier ./*.tgz 1>&2',
  'mkdir -p "$1/bin"',
  'ln -sfn "$1/prefix/bin/pu" "$1/bin/pu"',
].join("\n");
const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** The packages `pu host install` ships, as `scripts/pack.sh` names their tarballs. */
const PACKAGES = ["core", "ipc", "web", "engine", "cli"];

function facts(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  return out;
}

export interface HostAddFields {
  name: string;
  transport: HostTransport;
  root: string;
  maxAgents?: number | null;
}

export class HostService {
  private readonly file = new LockedFile();
  private readonly filePath: string;

  constructor(
    home: string,
    private readonly log: DaemonLog,
  ) {
    this.filePath = hostsFilePath(home);
  }

  async list(): Promise<HostRecord[]> {
    return (await this.read()).hosts;
  }

  async add(fields: HostAddFields): Promise<HostRecord> {
    const record = newHostRecord(fields, new Date());
    return this.file.withLock(this.filePath, async (write) => {
      const current = await this.read();
      if (current.hosts.some((h) => h.name === record.name)) {
        throw new PuError("INVALID_ARGUMENT", `host ${record.name} already exists (pu host remove ${record.name} first)`);
      }
      await write(`${JSON.stringify({ ...current, hosts: [...current.hosts, record] }, null, 2)}\n`);
      this.log.event("host_added", { host: record.name, transport: record.transport.kind });
      return record;
    });
  }

  async remove(name: string): Promise<HostRecord> {
    return this.file.withLock(this.filePath, async (write) => {
      const current = await this.read();
      const found = current.hosts.find((h) => h.name === name);
      if (!found) throw new PuError("NOT_FOUND", `no host named ${name} (pu host list)`);
      await write(`${JSON.stringify({ ...current, hosts: current.hosts.filter((h) => h.name !== name) }, null, 2)}\n`);
      this.log.event("host_removed", { host: name });
      return found;
    });
  }

  async get(name: string): Promise<HostRecord> {
    const found = (await this.list()).find((h) => h.name === name);
    if (!found) throw new PuError("NOT_FOUND", `no host named ${name} (pu host list)`);
    return found;
  }

  async check(name: string): Promise<HostCheck> {
    const host = await this.get(name);
    const started = Date.now();
    const probe = await run(transportArgv(host.transport, ["sh", "-c", PROBE_SCRIPT, "sh", host.root]), CHECK_TIMEOUT_MS);
    const base = { name, transport: host.transport.kind, root: host.root };
    if (probe.timedOut || probe.code !== 0) {
      const reason = probe.timedOut ? `no answer within ${CHECK_TIMEOUT_MS / 1000} s` : lastLine(probe.stderr) || `the transport exited ${probe.code}`;
      this.log.event("host_unreachable", { host: name, reason });
      return { ...base, reachable: false, ready: false, reason, node: null, git: null, pu: null, puPath: null, cores: null, freeDiskBytes: null, daemon: null, missing: [], seconds: (Date.now() - started) / 1000 };
    }
    const found = facts(probe.stdout);
    const node = found.get("node") || null;
    const git = found.get("git") || null;
    const puPath = found.get("pu_path") || null;
    const pu = found.get("pu") || null;
    const cores = Number(found.get("cores")) || null;
    const diskKb = Number(found.get("disk_kb"));
    const missing: string[] = [];
    const nodeMajor = node ? Number(/^v(\d+)/.exec(node)?.[1]) : 0;
    if (!node) missing.push("node (20 or newer)");
    else if (nodeMajor < MIN_NODE_MAJOR) missing.push(`node 20 or newer (the host has ${node})`);
    if (!git) missing.push("git");
    if (!puPath || !pu) missing.push("pu (pu host install)");
    let daemon: HostCheck["daemon"] = null;
    let reason: string | null = null;
    if (puPath && pu) {
      try {
        daemon = await this.handshake(host);
      } catch (error) {
        reason = error instanceof Error ? error.message : String(error);
      }
    }
    return {
      ...base,
      reachable: true,
      ready: missing.length === 0 && daemon !== null,
      reason,
      node,
      git,
      pu,
      puPath,
      cores,
      freeDiskBytes: Number.isFinite(diskKb) ? diskKb * 1024 : null,
      daemon,
      missing,
      seconds: (Date.now() - started) / 1000,
    };
  }

  /**
   * Ships this pu's packed tarballs (from `scripts/pack.sh DIR`) to ROOT/packages over the
   * transport, installs them with the host's npm under ROOT/prefix, links ROOT/bin/pu, then
   * checks the host again.
   */
  async install(name: string, packedDir: string): Promise<{ installed: string[]; check: HostCheck }> {
    const host = await this.get(name);
    if (!path.isAbsolute(packedDir)) throw new PuError("INVALID_ARGUMENT", `--packed needs an absolute directory (got ${packedDir})`);
    let files: string[];
    try {
      files = (await readdir(packedDir)).filter((f) => /^pu-[a-z]+-[0-9A-Za-z.+-]+\.tgz$/.test(f));
    } catch (error) {
      throw new PuError("NOT_FOUND", `cannot read ${packedDir}: ${(error as Error).message}`);
    }
    const tarballs = PACKAGES.map((pkg) => {
      const found = files.filter((f) => f.startsWith(`pu-${pkg}-`)).sort().pop();
      if (!found) throw new PuError("INVALID_ARGUMENT", `${packedDir} has no pu-${pkg}-*.tgz (make them with bash scripts/pack.sh ${packedDir})`);
      return found;
    });
    this.log.event("host_install_started", { host: name, tarballs });
    const fresh = await run(transportArgv(host.transport, ["sh", "-c", 'rm -rf "$1/packages" && mkdir -p "$1/packages"', "sh", host.root]), CHECK_TIMEOUT_MS);
    if (fresh.code !== 0) throw new PuError("DAEMON_UNAVAILABLE", `cannot prepare ${host.root}/packages on ${name}: ${lastLine(fresh.stderr) || `exit ${fresh.code}`}`);
    for (const file of tarballs) {
      const sent = await run(transportArgv(host.transport, ["sh", "-c", 'cat > "$1/packages/$2"', "sh", host.root, file]), CHECK_TIMEOUT_MS * 4, path.join(packedDir, file));
      if (sent.code !== 0) throw new PuError("IO_ERROR", `cannot copy ${file} to ${name}: ${lastLine(sent.stderr) || `exit ${sent.code}`}`);
    }
    const installed = await run(transportArgv(host.transport, ["sh", "-c", INSTALL_SCRIPT, "sh", host.root]), INSTALL_TIMEOUT_MS);
    if (installed.code !== 0) {
      this.log.event("host_install_failed", { host: name, stderr: installed.stderr.slice(-2000) });
      throw new PuError("SPAWN_FAILED", `npm install on ${name} failed${installed.timedOut ? " (timed out)" : ""}: ${lastLine(installed.stderr) || `exit ${installed.code}`}`);
    }
    this.log.event("host_installed", { host: name });
    return { installed: tarballs, check: await this.check(name) };
  }

  /** `pu daemon stdio` on the host (starting its daemon if needed) and pu's hello through it. */
  private async handshake(host: HostRecord): Promise<NonNullable<HostCheck["daemon"]>> {
    const bridge = await openHostBridge(host, "pu-control-plane", CHECK_TIMEOUT_MS);
    bridge.close();
    return bridge.client.daemon;
  }

  private async read(): Promise<HostsFile> {
    const text = await readTextIfExists(this.filePath);
    // A corrupt file is reported, never overwritten: every write goes through here first.
    return text === null ? { version: 1, hosts: [] } : parseHostsFile(text, this.filePath);
  }
}
