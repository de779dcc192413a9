// `$PU_HOME/hosts.json`: the places with a pu daemon of their own that this machine's daemon
// (the control plane) reaches through a transport the person already runs — OpenSSH, or an
// `exec` prefix for a container or pod. Written only by the daemon (locked, atomic).
import { createHash } from "node:crypto";
import path from "node:path";
import { z } from "zod";
import { PuError } from "./errors.js";
import { parseJsonText } from "./json-state.js";
import { remoteCommandLine } from "./remote-argv.js";

export const HOST_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** The name that stands for this machine in a list of places (`--on local,gpu-box`): never a host's. */
export const LOCAL_PLACE = "local";
/** `[user@]host`: never an ssh option (a leading "-"), never whitespace or shell syntax. */
const SSH_DESTINATION = /^(?:[A-Za-z0-9._][A-Za-z0-9._-]{0,63}@)?[A-Za-z0-9_][A-Za-z0-9._:-]{0,252}$/;
/** ssh options that would run a command of their own or accept an unknown host key. */
const REFUSED_SSH_OPTIONS = new Set(["proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "remotecommand", "stricthostkeychecking", "batchmode"]);

const SshTransport = z.object({
  kind: z.literal("ssh"),
  destination: z.string().regex(SSH_DESTINATION, "an ssh destination: [user@]host"),
  /** `ssh -F FILE`: for what the person's ~/.ssh/config does not already say. */
  configFile: z.string().min(1).max(4096).refine(path.isAbsolute, "an absolute path").optional(),
  /** `ssh -o KEY=VALUE`, in order. */
  options: z.array(z.string().regex(/^[A-Za-z]+=[^\s\0]{1,1024}$/, "KEY=VALUE")).max(64).default([]),
});
const ExecTransport = z.object({
  kind: z.literal("exec"),
  /** The prefix a command is run behind (`podman exec -i CTR`); argv, never a shell line. */
  command: z.array(z.string().min(1).max(4096)).min(1).max(64),
});
const TransportSchema = z.discriminatedUnion("kind", [SshTransport, ExecTransport]);
export type HostTransport = z.infer<typeof TransportSchema>;

const HostSchema = z.object({
  name: z.string().regex(HOST_NAME_PATTERN, "a host name: lowercase letters, digits and -"),
  transport: TransportSchema,
  /** On the host: pu's home (`ROOT/home`), its install (`ROOT/bin/pu`) and project mirrors. */
  root: z.string().min(2).max(4096).refine((p) => path.posix.isAbsolute(p) && !p.includes("\0"), "an absolute path on the host"),
  maxAgents: z.number().int().min(1).max(1000).nullable().default(null),
  addedAt: z.string(),
});
export type HostRecord = z.infer<typeof HostSchema>;

const HostsFileSchema = z.object({
  version: z.literal(1),
  hosts: z.array(HostSchema),
});
export type HostsFile = z.infer<typeof HostsFileSchema>;

export function hostsFilePath(home: string): string {
  return path.join(home, "hosts.json");
}

export function parseHostsFile(text: string, filePath: string): HostsFile {
  return parseJsonText(HostsFileSchema, text, filePath, "CONFIG_ERROR", (raw) => {
    const names = ((raw as { hosts?: { name?: unknown }[] })?.hosts ?? []).map((h) => h?.name);
    const repeated = names.filter((n, i) => names.indexOf(n) !== i);
    return repeated.length > 0 ? [`host ${String(repeated[0])} is listed twice`] : [];
  });
}

/** A host as the person describes it on `pu host add`, checked field by field. */
export function newHostRecord(fields: { name: string; transport: HostTransport; root: string; maxAgents?: number | null }, now: Date): HostRecord {
  if (fields.name === LOCAL_PLACE) throw new PuError("INVALID_ARGUMENT", `"${LOCAL_PLACE}" names this machine in a list of places (--on ${LOCAL_PLACE},HOST); give the host another name`);
  for (const option of fields.transport.kind === "ssh" ? fields.transport.options : []) {
    const key = option.slice(0, option.indexOf("=")).toLowerCase();
    if (REFUSED_SSH_OPTIONS.has(key)) {
      throw new PuError("INVALID_ARGUMENT", `ssh option ${option.slice(0, option.indexOf("="))} is pu's to set (host keys are always verified; no command of an option's own runs)`);
    }
  }
  const parsed = HostSchema.safeParse({ ...fields, maxAgents: fields.maxAgents ?? null, addedAt: now.toISOString() });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PuError("INVALID_ARGUMENT", `${issue?.path.join(".") || "host"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

/** Where pu lives on the host, under its root. */
export function hostLayout(host: Pick<HostRecord, "root">): { home: string; pu: string } {
  return { home: path.posix.join(host.root, "home"), pu: path.posix.join(host.root, "bin", "pu") };
}

/**
 * The local argv that runs `remote` (an argv) on the host: for ssh, one command line quoted for
 * the far shell, host keys verified and never a prompt (a daemon has no one to answer it); for
 * exec, the prefix and the argv as they are (no shell on either side).
 */
export function transportArgv(transport: HostTransport, remote: readonly string[], sharing?: SshSharing): string[] {
  if (transport.kind === "exec") return [...transport.command, ...remote];
  return [
    "ssh",
    ...(transport.configFile ? ["-F", transport.configFile] : []),
    ...transport.options.flatMap((o) => ["-o", o]),
    ...(sharing ? sshSharingOptions(sharing) : []),
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=yes",
    "-T",
    "--",
    transport.destination,
    remoteCommandLine(remote),
  ];
}

/**
 * OpenSSH connection sharing: one master connection per host, its socket at a path pu owns (under
 * `$PU_HOME`), kept a minute after its last user; keepalives so a dead link ends within ~45 s
 * instead of hanging whatever shares it.
 */
export interface SshSharing {
  controlPath: string;
}

function sshSharingOptions({ controlPath }: SshSharing): string[] {
  return ["-o", "ControlMaster=auto", "-o", `ControlPath=${controlPath}`, "-o", "ControlPersist=60", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"];
}

/** `ssh -O check` (does the shared connection's master answer on its socket) or `-O exit` (stop it). */
export function sshControlArgv(transport: Extract<HostTransport, { kind: "ssh" }>, controlPath: string, op: "check" | "exit"): string[] {
  return [
    "ssh",
    ...(transport.configFile ? ["-F", transport.configFile] : []),
    ...transport.options.flatMap((o) => ["-o", o]),
    "-o",
    `ControlPath=${controlPath}`,
    "-O",
    op,
    "--",
    transport.destination,
  ];
}

/** How the transport reads in a table: `ssh me@box` or `exec podman exec -i ctr`. */
export function describeTransport(transport: HostTransport): string {
  return transport.kind === "ssh" ? `ssh ${transport.destination}` : `exec ${transport.command.join(" ")}`;
}

/**
 * The argv, run through the transport, that bridges to the host daemon: its `pu daemon stdio`
 * with `PU_HOME=ROOT/home`, using `ROOT/bin/pu` when `pu host install` put it there.
 */
export function hostDaemonArgv(host: Pick<HostRecord, "root" | "transport">, sharing?: SshSharing): string[] {
  const layout = hostLayout(host);
  return transportArgv(host.transport, ["env", `PU_HOME=${layout.home}`, "sh", "-c", 'if [ -x "$1" ]; then exec "$1" daemon stdio; fi; exec pu daemon stdio', "sh", layout.pu], sharing);
}

/**
 * Where a project's mirror lives on the host: its folder name, then a hash of the project's path
 * on this machine, so two projects named alike never share a mirror.
 */
export function hostMirrorPath(host: Pick<HostRecord, "root">, projectRoot: string): string {
  const base = path.basename(projectRoot).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40) || "project";
  const hash = createHash("sha256").update(projectRoot).digest("hex").slice(0, 10);
  return path.posix.join(host.root, "projects", `${base}-${hash}`);
}

/**
 * A git URL (git's `ext::` remote helper) whose far end is `git <service> MIRROR` run through the
 * transport: git's own protocol over the host's transport, no port and no shell line of pu's
 * making beyond the transport's own quoting. In ext::, a space separates words and `%` escapes.
 */
export function hostGitUrl(host: Pick<HostRecord, "transport">, service: "receive-pack" | "upload-pack", mirror: string, sharing?: SshSharing): string {
  const words = transportArgv(host.transport, ["git", service, mirror], sharing);
  return `ext::${words.map((w) => w.replace(/%/g, "%%").replace(/ /g, "% ")).join(" ")}`;
}
