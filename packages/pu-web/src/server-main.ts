// `pu-web --home DIR [--port N] [--bind ADDR --insecure-bind]`: the `pu web` server. Started
// detached by `pu web`; a client of the daemon like the CLI (it owns no agent and no file but
// its own web.json and web.log). It stops on `pu web stop` (SIGTERM or the CLI's stop request)
// and when the daemon goes away.
import { readFileSync, rmSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import { parseArgs } from "node:util";
import writeFileAtomic from "write-file-atomic";
import { LOOPBACK_HOSTS, webLogPath, webOpenPagePath, webServerFilePath, type WebServerFile } from "@pu/core/web-server-file";
import { AccessGuard } from "./access-guard.js";
import { DaemonBridge } from "./daemon-bridge.js";
import { listenAll } from "./listen.js";
import { openEventLog } from "@pu/core/event-log";
import { WebServer } from "./web-server.js";

interface ServerArgs {
  home: string;
  port: number;
  bind: string | undefined;
}

function parseServerArgs(argv: string[]): ServerArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      home: { type: "string" },
      port: { type: "string" },
      bind: { type: "string" },
      "insecure-bind": { type: "boolean" },
    },
    strict: true,
  });
  if (!values.home) throw new Error("--home is required");
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0-65535, not ${values.port}`);
  // `pu web` checks this too; the server refuses on its own so no other caller can skip it.
  if (values.bind !== undefined && !LOOPBACK_HOSTS.includes(values.bind) && !values["insecure-bind"]) {
    throw new Error(`--bind ${values.bind} is not a loopback address; add --insecure-bind to serve on it (a login token is still required)`);
  }
  return { home: values.home, port, bind: values.bind };
}

export async function runWebServerFromArgv(argv: string[]): Promise<void> {
  let args: ServerArgs;
  try {
    args = parseServerArgs(argv);
  } catch (error) {
    process.stderr.write(`pu-web: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const log = openEventLog(webLogPath(args.home));
  const filePath = webServerFilePath(args.home);
  let bridge: DaemonBridge;
  try {
    bridge = await DaemonBridge.connect(args.home, log);
  } catch (error) {
    log.event("daemon_unreachable", { error });
    process.stderr.write(`pu-web: cannot reach the pu daemon: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(4);
  }
  const server = new WebServer(bridge, log, webOpenPagePath(args.home));
  const addresses = args.bind === undefined ? ["127.0.0.1", "::1"] : [args.bind];
  const { port, listening } = await listenAll(server.makeHttpServer, addresses, args.port);
  const served = servedNames(args.bind);
  const guard = new AccessGuard(served.hostNames, port);
  server.useGuard(guard);
  const file: WebServerFile = {
    version: 1,
    pid: process.pid,
    host: served.linkHost,
    port,
    listening,
    secret: guard.secret,
    startedAt: new Date().toISOString(),
  };
  await writeFileAtomic(filePath, JSON.stringify(file, null, 2) + "\n", { mode: 0o600 });
  log.event("listening", { port, listening, daemonPid: bridge.daemonPid });

  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    log.event("stopping", { why });
    // Only our own file: a newer server may have replaced it.
    try {
      const current = JSON.parse(readFileSync(filePath, "utf8")) as { pid?: number };
      if (current.pid === process.pid) rmSync(filePath, { force: true });
    } catch {
      // gone already
    }
    server.close();
    bridge.close();
    log.close();
    setTimeout(() => process.exit(0), 50).unref();
  };
  server.onStop(() => stop("pu web stop"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  void bridge.lost.then((why) => stop(why));
}


/** Addresses that mean "every interface": a browser never names them in Host. */
const WILDCARD_BINDS = ["0.0.0.0", "::"];

/**
 * The names a browser may use in Host for this server, and the one its login links use. Bound to
 * every interface (`--bind 0.0.0.0 --insecure-bind`), that is each address this machine has and
 * its host name — not the literal 0.0.0.0, which no other machine can open — and a link names its
 * first outside IPv4 address. Any other name (a rebinding domain) is still 403.
 */
function servedNames(bind: string | undefined): { hostNames: string[]; linkHost: string } {
  if (bind === undefined) return { hostNames: [...LOOPBACK_HOSTS], linkHost: "127.0.0.1" };
  if (!WILDCARD_BINDS.includes(bind)) return { hostNames: [bind], linkHost: bind };
  const interfaces = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  const outside = interfaces.find((a) => a.family === "IPv4" && !a.internal)?.address;
  return {
    hostNames: [...new Set([...LOOPBACK_HOSTS, ...interfaces.map((a) => a.address), hostname().toLowerCase()])],
    linkHost: outside ?? "127.0.0.1",
  };
}
