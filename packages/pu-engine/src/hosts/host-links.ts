// The control plane's connections to host daemons: one shared link per host (status, spawn,
// keys, kill…) and a bridge of its own per attached viewer (a stream ends with its connection).
// Each is `pu daemon stdio` run through the host's transport, with pu's own hello and version
// check. A link that fails is `unreachable` since then, with the transport's last word; the next
// attempt waits out a doubling backoff (1 s … 30 s), so a dead host costs a request nothing but
// the last known answer, and never a hang.
import { spawn, type ChildProcess } from "node:child_process";
import { Duplex } from "node:stream";
import { PuError, isPuError } from "@pu/core/errors";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { hostDaemonArgv, hostGitUrl, sshControlArgv, transportArgv, type HostRecord, type SshSharing } from "@pu/core/hosts-file";
import { connectClientOverStream, type Client, type RequestOptions } from "@pu/ipc/client";
import type { RequestFields, RequestType, ResultOf } from "@pu/ipc/protocol";
import type { DaemonLog } from "../daemon-log.js";
import { lastLine, run } from "./run-command.js";

/** A unix socket path longer than this is refused by the kernel (108 bytes with the NUL); sharing is then off. */
const MAX_CONTROL_PATH = 100;
const CONTROL_CHECK_TIMEOUT_MS = 3000;

/** How long a host gets to answer pu's hello before it reads unreachable. */
const HOST_CONNECT_TIMEOUT_MS = 10_000;
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

export interface HostLinkState {
  host: string;
  state: "connected" | "unreachable" | "idle";
  /** ISO time of the last change of state. */
  since: string | null;
  reason: string | null;
  /** The host daemon's pid and version while connected. */
  daemon: { pid: number; daemonVersion: string } | null;
}

/** A bridge to a host daemon: the client and the transport process under it. */
export interface HostBridge {
  client: Client;
  close(): void;
}

/** Starts `pu daemon stdio` on the host and completes the hello through it. */
export async function openHostBridge(host: HostRecord, clientName: string, timeoutMs = HOST_CONNECT_TIMEOUT_MS, sharing?: SshSharing): Promise<HostBridge> {
  const argv = hostDaemonArgv(host, sharing);
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  const spawnFailed = new Promise<never>((_, reject) => child.once("error", (e) => reject(new PuError("DAEMON_UNAVAILABLE", `cannot run ${argv[0]}: ${e.message}`))));
  spawnFailed.catch(() => undefined);
  const stop = () => {
    child.stdin?.end();
    if (child.exitCode === null && child.signalCode === null) setTimeout(() => child.kill("SIGKILL"), 2000).unref();
  };
  try {
    const client = await Promise.race([
      connectClientOverStream(Duplex.from({ readable: child.stdout!, writable: child.stdin! }), {
        clientName,
        timeoutMs,
        remedy: `run \`pu host install ${host.name}\``,
      }),
      spawnFailed,
    ]);
    void client.closed.then(stop);
    return {
      client,
      close: () => {
        client.close();
        stop();
      },
    };
  } catch (error) {
    child.kill("SIGKILL");
    if (isPuError(error) && error.code === "PROTOCOL_MISMATCH") throw new PuError("PROTOCOL_MISMATCH", `host ${host.name}: ${error.message}`);
    // The transport's own last word (`Connection refused`, `Host key verification failed`) says more than a timeout.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const said = lastLine(stderr);
    // The host's own pu and its daemon disagree (an upgrade half done there): said by the host's bridge.
    if (/speaks protocol/.test(said)) {
      throw new PuError("PROTOCOL_MISMATCH", `host ${host.name}: ${said.replace(/^pu: /, "").replace(/; run `pu daemon restart`$/, "")}; run \`pu host install ${host.name}\``);
    }
    throw new PuError("DAEMON_UNAVAILABLE", `host ${host.name} is unreachable: ${said || (error instanceof Error ? error.message : String(error))}`);
  }
}

class HostLink {
  private bridge?: HostBridge;
  private connecting?: Promise<Client>;
  private failures = 0;
  private retryAt = 0;
  status: HostLinkState;

  constructor(
    private host: HostRecord,
    private readonly log: DaemonLog,
    private readonly onChange: (state: HostLinkState) => void,
    private readonly open: (host: HostRecord) => Promise<HostBridge>,
  ) {
    this.status = { host: host.name, state: "idle", since: null, reason: null, daemon: null };
  }

  update(host: HostRecord): void {
    this.host = host;
  }

  async client(): Promise<Client> {
    if (this.bridge) return this.bridge.client;
    if (this.connecting) return this.connecting;
    if (Date.now() < this.retryAt) {
      throw new PuError("DAEMON_UNAVAILABLE", `host ${this.host.name} is unreachable since ${this.status.since}: ${this.status.reason} (next try in ${Math.ceil((this.retryAt - Date.now()) / 1000)} s)`);
    }
    this.connecting = this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    try {
      const bridge = await this.open(this.host);
      this.bridge = bridge;
      this.failures = 0;
      this.retryAt = 0;
      this.set({ state: "connected", reason: null, daemon: { pid: bridge.client.daemon.pid, daemonVersion: bridge.client.daemon.daemonVersion } });
      this.log.event("host_connected", { host: this.host.name, pid: bridge.client.daemon.pid });
      void bridge.client.closed.then(() => {
        if (this.bridge !== bridge) return;
        this.bridge = undefined;
        // A link that was up is tried again at once on the next request; backoff is for failed attempts.
        this.fail("the connection closed", { retryNow: true });
      });
      return bridge.client;
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  private fail(reason: string, { retryNow = false } = {}): void {
    const delay = retryNow ? 0 : Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** this.failures);
    if (!retryNow) this.failures += 1;
    this.retryAt = Date.now() + delay;
    if (this.status.state !== "unreachable" || this.status.reason !== reason) {
      this.log.event("host_unreachable", { host: this.host.name, reason, retryInMs: delay });
    }
    this.set({ state: "unreachable", reason, daemon: null }, this.status.state === "unreachable");
  }

  private set(fields: Omit<HostLinkState, "host" | "since">, keepSince = false): void {
    this.status = { host: this.host.name, ...fields, since: keepSince ? this.status.since : new Date().toISOString() };
    this.onChange(this.status);
  }

  /** A failed request on a live link: the link is dropped when the failure was the connection's. */
  dropIfBroken(error: unknown): void {
    if (isPuError(error) && (error.code === "DAEMON_UNAVAILABLE" || error.code === "TIMEOUT") && this.bridge) {
      const bridge = this.bridge;
      this.bridge = undefined;
      bridge.close();
      this.fail(error.message);
    }
  }

  close(): void {
    this.bridge?.close();
    this.bridge = undefined;
  }
}

export class HostLinks {
  private readonly links = new Map<string, HostLink>();
  private readonly listeners = new Set<(state: HostLinkState) => void>();

  private readonly controlDir: string;
  /** ssh hosts whose shared connection this daemon may have started (closed with the daemon). */
  private readonly shared = new Map<string, HostRecord>();

  constructor(
    private readonly log: DaemonLog,
    home: string,
  ) {
    this.controlDir = path.join(home, "ssh");
  }

  /** The host's ssh connection sharing (a socket under `$PU_HOME/ssh`), or none for exec or a too-long path. */
  sharing(host: HostRecord): SshSharing | undefined {
    if (host.transport.kind !== "ssh") return undefined;
    const controlPath = path.join(this.controlDir, host.name);
    return Buffer.byteLength(controlPath) > MAX_CONTROL_PATH ? undefined : { controlPath };
  }

  /** The local argv that runs `remote` on the host, over its shared connection. */
  argv(host: HostRecord, remote: readonly string[]): string[] {
    return transportArgv(host.transport, remote, this.sharing(host));
  }

  gitUrl(host: HostRecord, service: "receive-pack" | "upload-pack", mirror: string): string {
    return hostGitUrl(host, service, mirror, this.sharing(host));
  }

  /**
   * Before a new bridge rides the shared connection: a master that does not answer `ssh -O check`
   * (hung on a dead link) would hang every command that shares it, so its socket is removed and
   * the next command starts a fresh master. (A socket nobody listens on, ssh unlinks itself.)
   */
  async freshen(host: HostRecord): Promise<void> {
    const sharing = this.sharing(host);
    if (!sharing || host.transport.kind !== "ssh") return;
    await mkdir(this.controlDir, { recursive: true, mode: 0o700 });
    this.shared.set(host.name, host);
    if (!existsSync(sharing.controlPath)) return;
    const check = await run(sshControlArgv(host.transport, sharing.controlPath, "check"), CONTROL_CHECK_TIMEOUT_MS);
    if (check.code === 0) return;
    this.log.event("ssh_control_stale", { host: host.name, controlPath: sharing.controlPath, timedOut: check.timedOut, said: lastLine(check.stderr) });
    await rm(sharing.controlPath, { force: true });
  }

  private async openBridge(host: HostRecord, clientName: string): Promise<HostBridge> {
    await this.freshen(host);
    return openHostBridge(host, clientName, HOST_CONNECT_TIMEOUT_MS, this.sharing(host));
  }

  private link(host: HostRecord): HostLink {
    let link = this.links.get(host.name);
    if (!link) {
      link = new HostLink(host, this.log, (state) => this.listeners.forEach((l) => l(state)), (h) => this.openBridge(h, "pu-control-plane"));
      this.links.set(host.name, link);
    } else link.update(host);
    return link;
  }

  /** One request to the host's daemon over the shared link (connecting first if needed). */
  async request<T extends RequestType>(host: HostRecord, type: T, fields: RequestFields<T>, options?: RequestOptions): Promise<ResultOf<T>> {
    const link = this.link(host);
    const client = await link.client();
    try {
      return await client.request(type, fields, options);
    } catch (error) {
      link.dropIfBroken(error);
      throw error;
    }
  }

  /** A bridge of its own, for a stream that lives as long as its connection (attach). */
  async dedicated(host: HostRecord): Promise<HostBridge> {
    return this.openBridge(host, "pu-control-plane-viewer");
  }

  state(name: string): HostLinkState {
    return this.links.get(name)?.status ?? { host: name, state: "idle", since: null, reason: null, daemon: null };
  }

  onChange(listener: (state: HostLinkState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  forget(name: string): void {
    this.links.get(name)?.close();
    this.links.delete(name);
  }

  /** Closes every link, and asks each shared ssh master this daemon may have started to exit. */
  async closeAll(): Promise<void> {
    for (const link of this.links.values()) link.close();
    this.links.clear();
    await Promise.all(
      [...this.shared.values()].map(async (host) => {
        const sharing = this.sharing(host);
        if (!sharing || host.transport.kind !== "ssh" || !existsSync(sharing.controlPath)) return;
        await run(sshControlArgv(host.transport, sharing.controlPath, "exit"), CONTROL_CHECK_TIMEOUT_MS);
      }),
    );
    this.shared.clear();
  }
}
