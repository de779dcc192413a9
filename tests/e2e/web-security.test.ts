// `pu web`'s guard from outside a browser: raw HTTP and WebSocket requests with the wrong Host,
// the wrong or no Origin, no session, the session cookie without its key (what any other local
// service the browser visits receives), a forged form post, a spent login link; frames and
// bodies that must not take the server down; where it listens; where its secret and tokens are
// (never in `ps`, the logs, or a file others can read); and that it stops with `pu web stop` and
// with the daemon.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { PuSandbox } from "../helpers/pu-sandbox.js";
import { isProcessAlive, waitFor } from "../helpers/wait-for.js";
import { login, openWeb, rawRequest, readWebFile, sessionKeyOf, startWeb, tokenOf } from "../helpers/web.js";

/** Every process's command line on this machine (what `ps` shows). */
function allCommandLines(): string {
  const out: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.push(readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // gone meanwhile
    }
  }
  return out.join("\n");
}

/** The subprotocols the page offers: `pu` and its session key. */
const withKey = (key: string) => ["pu", `pu-key.${key}`];

/** Opens a WebSocket with these headers (and subprotocols); resolves with the refusal status, or "open". */
function tryUpgrade(port: number, pathAndQuery: string, headers: Record<string, string>, protocols: string[] = []): Promise<number | "open"> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${pathAndQuery}`, protocols, { headers });
    ws.on("open", () => {
      ws.close();
      resolve("open");
    });
    ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.on("error", () => resolve(0));
  });
}

describe("pu web: what the guard lets through", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let port: number;
  let host: string;
  let origin: string;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-web-guard-");
    await sb.ok(["init"]);
    const started = await startWeb(sb);
    port = started.port;
    host = `127.0.0.1:${port}`;
    origin = `http://${host}`;
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("listens on loopback only, and refuses another --bind without --insecure-bind", async () => {
    expect(readWebFile(sb.home).listening.every((a) => a === "127.0.0.1" || a === "::1")).toBe(true);
    const outside = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    if (outside) {
      const reached = await rawRequest(port, "GET", "/", { host }).then(() => true);
      expect(reached).toBe(true);
      const other = await new Promise<string>((resolve) => {
        import("node:net").then(({ connect }) => {
          const socket = connect({ host: outside, port }, () => {
            socket.destroy();
            resolve("connected");
          });
          socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
        });
      });
      expect(other).toBe("ECONNREFUSED");
    }
    const bind = await sb.pu(["web", "--no-open", "--bind", "0.0.0.0"]);
    expect(bind.code).toBe(2);
    expect(bind.stderr.trim().split("\n")).toHaveLength(1);
    expect(bind.stderr).toContain("--insecure-bind");
  });

  it("answers 403 to any other Host before looking at anything else (DNS rebinding), without spending the login link", async () => {
    const { url } = await startWeb(sb);
    const token = tokenOf(url);
    for (const badHost of ["evil.example", `evil.example:${port}`, `127.0.0.1:${port + 1}`, "127.0.0.1", `localhost.evil.example:${port}`]) {
      const res = await rawRequest(port, "GET", `/login?token=${token}`, { host: badHost });
      expect(res.status, badHost).toBe(403);
      expect(res.body.trim()).toBe("forbidden");
      expect(res.headers["set-cookie"]).toBeUndefined();
    }
    expect((await rawRequest(port, "POST", "/cli/login-token", { host: "evil.example", authorization: `Bearer ${readWebFile(sb.home).secret}` })).status).toBe(403);
    // The link still works on the right Host: nothing before the Host check consumed it.
    const ok = await rawRequest(port, "GET", `/login?token=${token}`, { host: `localhost:${port}` });
    expect(ok.status).toBe(303);
  });

  it("a login link works once, sets an HttpOnly SameSite=Strict cookie and redirects to a URL without the token, the key in its fragment", async () => {
    const { url } = await startWeb(sb);
    const first = await rawRequest(port, "GET", `/login?token=${tokenOf(url)}`, { host });
    expect(first.status).toBe(303);
    expect(first.headers.location).toMatch(/^\/#pu-key=[A-Za-z0-9_-]{32}$/);
    const setCookie = String(first.headers["set-cookie"]);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(first.headers["referrer-policy"]).toBe("no-referrer");
    const again = await rawRequest(port, "GET", `/login?token=${tokenOf(url)}`, { host });
    expect(again.status).toBe(401);
    expect(again.body.trim()).toBe("unauthorized");
    expect((await rawRequest(port, "GET", "/login?token=made-up", { host })).status).toBe(401);
  });

  it("without a session every API call and WebSocket is 401; the page's own files are served and hold no secret", async () => {
    for (const p of ["/", "/assets/app.js", "/assets/app.css"]) {
      const res = await rawRequest(port, "GET", p, { host });
      expect(res.status, p).toBe(200);
      expect(res.headers["set-cookie"], p).toBeUndefined();
    }
    const api = await rawRequest(port, "GET", "/api/projects", { host });
    expect(api.status).toBe(401);
    expect(api.body.trim()).toBe("unauthorized");
    expect((await rawRequest(port, "POST", "/api/request", { host, origin, "content-type": "application/json" }, '{"type":"status"}')).status).toBe(401);
    expect(await tryUpgrade(port, "/ws/status", { origin })).toBe(401);
    expect(await tryUpgrade(port, "/ws/terminal?agent=ag-abcdefgh", { origin })).toBe(401);
    expect((await rawRequest(port, "GET", "/api/projects", { host, cookie: `pu_session_${port}=forged` })).status).toBe(401);
    expect((await rawRequest(port, "POST", "/cli/login-token", { host, authorization: "Bearer not-the-secret" })).status).toBe(401);
  });

  it("the session cookie alone — what every other service on 127.0.0.1 the browser visits receives — reads nothing and drives nothing", async () => {
    const { cookie, key } = await login(sb, port);
    const spawned = await sb.spawnAgent(["--agent", "terminal", "--root", "--name", "cookie-only"]);
    // What such a service can do with the cookie: fetch the page (no key in it), then forge Host
    // and Origin as any non-browser client can.
    const page = await rawRequest(port, "GET", "/", { host, cookie });
    expect(page.status).toBe(200);
    expect(page.body).not.toContain(key);
    expect(page.body).not.toMatch(/pu-csrf|pu-key/);
    const forged = { host, cookie, origin, "content-type": "application/json" };
    const typed = JSON.stringify({ type: "type_text", fields: { agentId: spawned.agentId, text: "echo owned-by-$((6*7))" } });
    expect((await rawRequest(port, "POST", "/api/request", forged, typed)).status).toBe(401);
    expect((await rawRequest(port, "POST", "/api/request", { ...forged, "x-pu-key": "guess" }, typed)).status).toBe(401);
    expect((await rawRequest(port, "GET", "/api/projects", { host, cookie })).status).toBe(401);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin })).toBe(401);
    expect(await tryUpgrade(port, `/ws/terminal?agent=${spawned.agentId}`, { cookie, origin })).toBe(401);
    expect(await tryUpgrade(port, `/ws/terminal?agent=${spawned.agentId}`, { cookie, origin }, withKey("guess"))).toBe(401);
    // The key without the cookie is nothing either.
    expect((await rawRequest(port, "GET", "/api/projects", { host, "x-pu-key": key })).status).toBe(401);
    expect(await tryUpgrade(port, "/ws/status", { origin }, withKey(key))).toBe(401);
    // Both: the page's way in.
    const projects = await rawRequest(port, "GET", "/api/projects", { host, cookie, "x-pu-key": key });
    expect(projects.status).toBe(200);
    expect(await tryUpgrade(port, `/ws/terminal?agent=${spawned.agentId}`, { cookie, origin }, withKey(key))).toBe("open");
    expect(await sb.logs(spawned.agentId)).not.toContain("owned-by-42");
    // The same request with the key does type: the refusals above were the guard, not the request.
    expect((await rawRequest(port, "POST", "/api/request", { ...forged, "x-pu-key": key }, typed)).status).toBe(200);
    await sb.waitForLogs(spawned.agentId, "owned-by-42");
    await sb.ok(["kill", spawned.agentId]);
  });

  it("a WebSocket upgrade needs this server's Origin, even with a session", async () => {
    const { cookie, key } = await login(sb, port);
    const protocols = withKey(key);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin: "http://evil.example" }, protocols)).toBe(403);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin: `http://127.0.0.1:${port + 1}` }, protocols)).toBe(403);
    expect(await tryUpgrade(port, "/ws/status", { cookie }, protocols)).toBe(403);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin, host: "evil.example" }, protocols)).toBe(403);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin }, protocols)).toBe("open");
  });

  it("a state-changing request needs the key header and same-site JSON: a cross-site form post is refused and changes nothing", async () => {
    const { cookie, key } = await login(sb, port);
    expect(key.length).toBeGreaterThan(20);
    const pause = JSON.stringify({ type: "queue_pause", fields: {} });
    const paused = async () => (await sb.puJson<{ paused: boolean }>(["queue"])).paused;
    // What a form on evil.example can send: the browser adds the cookie only for a top-level
    // navigation with SameSite=Lax, but even if it did, neither the header nor JSON is possible.
    const form = await rawRequest(port, "POST", "/api/request", { host, cookie, origin: "http://evil.example", "content-type": "application/x-www-form-urlencoded" }, "type=queue_pause");
    expect(form.status).toBe(401);
    const noHeader = await rawRequest(port, "POST", "/api/request", { host, cookie, origin, "content-type": "application/json" }, pause);
    expect(noHeader.status).toBe(401);
    const wrongKey = await rawRequest(port, "POST", "/api/request", { host, cookie, origin, "content-type": "application/json", "x-pu-key": "guess" }, pause);
    expect(wrongKey.status).toBe(401);
    const crossSite = await rawRequest(port, "POST", "/api/request", { host, cookie, "sec-fetch-site": "cross-site", "content-type": "application/json", "x-pu-key": key }, pause);
    expect(crossSite.status).toBe(403);
    const otherOrigin = await rawRequest(port, "POST", "/api/request", { host, cookie, origin: "http://evil.example", "content-type": "application/json", "x-pu-key": key }, pause);
    expect(otherOrigin.status).toBe(403);
    const textPlain = await rawRequest(port, "POST", "/api/request", { host, cookie, origin, "content-type": "text/plain", "x-pu-key": key }, pause);
    expect(textPlain.status).toBe(415);
    expect(await paused()).toBe(false);

    const ok = await rawRequest(port, "POST", "/api/request", { host, cookie, origin, "content-type": "application/json", "x-pu-key": key }, pause);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ ok: true, result: { paused: true } });
    expect(await paused()).toBe(true);
    await sb.ok(["queue", "resume"]);
  });

  it("the page may make only its own requests, only on projects the daemon knows", async () => {
    const { cookie, key } = await login(sb, port);
    const headers = { host, cookie, origin, "content-type": "application/json", "x-pu-key": key };
    const send = async (body: unknown) => JSON.parse((await rawRequest(port, "POST", "/api/request", headers, JSON.stringify(body))).body) as { ok: boolean; message?: string };
    expect(await send({ type: "shutdown", fields: {} })).toMatchObject({ ok: false, message: "not a request the page may make" });
    expect(await send({ type: "init", fields: { projectRoot: "/tmp" } })).toMatchObject({ ok: false });
    const marker = path.join(sb.base, "pwned");
    // The page spawns agent types only: a command line of its own is the CLI's.
    expect(await send({ type: "spawn", fields: { projectRoot: sb.root, root: true, command: `touch ${marker}` } })).toMatchObject({ ok: false, message: "spawn.command is for the CLI, not the page" });
    expect(await send({ type: "spawn", fields: { projectRoot: sb.root, root: true, agent: "terminal", extraArgs: ["-c", `touch ${marker}`] } })).toMatchObject({ ok: false });
    const elsewhere = await send({ type: "spawn", fields: { projectRoot: os.tmpdir(), agent: "terminal" } });
    expect(elsewhere).toMatchObject({ ok: false, message: "not a project the pu daemon knows" });
    expect(await send({ type: "kill", fields: { projectRoot: sb.root, target: 42 } })).toMatchObject({ ok: false });
    // A page is never an agent asking: it cannot speak as one.
    expect(await send({ type: "ticket_create", fields: { projectRoot: sb.root, title: "as an agent", callerAgentId: "ag-abcdefgh" } })).toMatchObject({ ok: false, message: "ticket_create.callerAgentId is for the CLI, not the page" });
    expect(isProcessAlive(readWebFile(sb.home).pid)).toBe(true);
    expect(existsSync(marker)).toBe(false);
    const page = await rawRequest(port, "GET", "/", { host, cookie });
    expect(page.headers["content-security-policy"]).toMatch(/script-src 'self'/);
    expect(page.headers["content-security-policy"]).toMatch(/frame-ancestors 'none'/);
    expect(page.headers["x-frame-options"]).toBe("DENY");
  });

  it("an oversized or invalid UTF-8 frame closes only that socket: the server keeps answering (same pid)", async () => {
    const { cookie, key } = await login(sb, port);
    const spawned = await sb.spawnAgent(["--agent", "terminal", "--root", "--name", "frames"]);
    const pidBefore = readWebFile(sb.home).pid;
    /** Opens a socket, sends one bad frame once it is open, and resolves with the close code it gets. */
    const closeCodeAfter = (route: string, bad: (ws: WebSocket) => void) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}${route}`, withKey(key), { headers: { cookie, origin } });
        ws.on("open", () => bad(ws));
        ws.on("close", (code) => resolve(code));
        ws.on("error", () => undefined);
        ws.on("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      });
    const oversized = (ws: WebSocket) => ws.send(Buffer.alloc(1024 * 1024 + 1, 0x61), { binary: true });
    // A text frame whose bytes are not UTF-8 (the client library sends them as they are).
    const invalidUtf8 = (ws: WebSocket) => ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    for (const route of ["/ws/status", `/ws/terminal?agent=${spawned.agentId}`]) {
      expect(await closeCodeAfter(route, oversized), `${route}: oversized`).toBe(1009);
      expect(await closeCodeAfter(route, invalidUtf8), `${route}: invalid UTF-8`).toBe(1007);
    }
    expect(readWebFile(sb.home).pid).toBe(pidBefore);
    expect(isProcessAlive(pidBefore)).toBe(true);
    expect((await rawRequest(port, "GET", "/api/projects", { host, cookie, "x-pu-key": key })).status).toBe(200);
    expect(await tryUpgrade(port, "/ws/status", { cookie, origin }, withKey(key))).toBe("open");
    const events = readFileSync(path.join(sb.home, "web.log"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string; code?: string });
    const codes = events.filter((e) => e.event === "socket_error").map((e) => e.code);
    expect(codes).toEqual(expect.arrayContaining(["WS_ERR_UNSUPPORTED_MESSAGE_LENGTH", "WS_ERR_INVALID_UTF8"]));
    await sb.ok(["kill", spawned.agentId]);
  });

  it("a body that is JSON but not an object is 400 INVALID_ARGUMENT in one line; an oversized body is 413", async () => {
    const { cookie, key } = await login(sb, port);
    const headers = { host, cookie, origin, "content-type": "application/json", "x-pu-key": key };
    for (const body of ["null", "[]", "42", '"status"']) {
      const res = await rawRequest(port, "POST", "/api/request", headers, body);
      expect(res.status, body).toBe(400);
      expect(JSON.parse(res.body), body).toEqual({ ok: false, code: "INVALID_ARGUMENT", message: "the request body must be a JSON object {type, fields}" });
    }
    const big = await rawRequest(port, "POST", "/api/request", headers, JSON.stringify({ type: "status", fields: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(big.status).toBe(413);
    expect(big.body.trim()).toBe("too large");
    expect(readFileSync(path.join(sb.home, "web.log"), "utf8")).not.toContain("request_failed");
    expect((await rawRequest(port, "GET", "/api/projects", { host, cookie, "x-pu-key": key })).status).toBe(200);
  });

  it("the page `pu web` opens is written 0600 (even over an older, looser one) and removed once its link is used", async () => {
    const openPage = path.join(sb.home, "web-open.html");
    writeFileSync(openPage, "stale");
    chmodSync(openPage, 0o644);
    const { openedFile } = await openWeb(sb);
    expect(openedFile).toBe(openPage);
    expect(statSync(openPage).mode & 0o777).toBe(0o600);
    const link = /url=(http:[^"]+)"/.exec(readFileSync(openPage, "utf8"))?.[1] ?? "";
    expect(link).toContain("/login?token=");
    // Another link spent first leaves this page alone: its own token still works.
    const other = await login(sb, port);
    expect(other.key).not.toBe("");
    expect(existsSync(openPage)).toBe(true);
    const used = await rawRequest(port, "GET", `/login?token=${tokenOf(link)}`, { host });
    expect(used.status).toBe(303);
    expect(sessionKeyOf(used)).not.toBe("");
    expect(existsSync(openPage)).toBe(false);
    expect(readdirSync(sb.home).filter((name) => name.startsWith("web-open"))).toEqual([]);
  });

  it("the secret and login tokens never show in ps, daemon.log or web.log; web.json is 0600", async () => {
    const { url } = await startWeb(sb);
    const token = tokenOf(url);
    const { secret } = readWebFile(sb.home);
    const commandLines = allCommandLines();
    expect(commandLines).toContain("pu-web");
    expect(commandLines).not.toContain(token);
    expect(commandLines).not.toContain(secret);
    for (const log of ["daemon.log", "web.log"]) {
      const text = readFileSync(path.join(sb.home, log), "utf8");
      expect(text, log).not.toContain(token);
      expect(text, log).not.toContain(secret);
      expect(text, log).not.toContain("token=");
    }
    expect(statSync(path.join(sb.home, "web.json")).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(sb.home, "web.log")).mode & 0o777).toBe(0o600);
  });

  it("`pu web` finds the running server; `pu web stop` stops it; the daemon stopping stops it too", async () => {
    const running = readWebFile(sb.home);
    const again = await startWeb(sb);
    expect(again).toMatchObject({ started: false, pid: running.pid, port: running.port });
    expect(await sb.ok(["web", "stop"])).toBe(`pu web stopped (pid ${running.pid})\n`);
    expect(isProcessAlive(running.pid)).toBe(false);
    expect(await sb.ok(["web", "stop"])).toBe("pu web is not running\n");

    const restarted = await startWeb(sb);
    expect(restarted.started).toBe(true);
    await sb.ok(["daemon", "stop"]);
    await waitFor("pu web to stop with the daemon", () => !isProcessAlive(restarted.pid), 10_000);
  });

  it("a SIGKILLed daemon takes pu web down too; the next pu web starts a fresh server with a fresh secret", async () => {
    const first = await startWeb(sb);
    expect(first.started).toBe(true);
    const secretBefore = readFileSync(path.join(sb.home, "web.json"), "utf8");
    await sb.sigkillDaemon();
    await waitFor("pu web to stop when its daemon is killed", () => !isProcessAlive(first.pid), 15_000);
    const second = await startWeb(sb);
    expect(second.started).toBe(true);
    expect(second.pid).not.toBe(first.pid);
    expect(readFileSync(path.join(sb.home, "web.json"), "utf8")).not.toBe(secretBefore);
    // The new server answers with a fresh login link; the old link is worthless.
    const oldLink = await rawRequest(second.port, "GET", `/login?token=${tokenOf(first.url)}`, { host: `127.0.0.1:${second.port}` });
    expect(oldLink.status).not.toBe(303);
    const newLink = await rawRequest(second.port, "GET", `/login?token=${tokenOf(second.url)}`, { host: `127.0.0.1:${second.port}` });
    expect(newLink.status).toBe(303);
  });
  it("a stale web.json whose pid now names another process: `pu web stop` and `pu web` never signal it", async () => {
    const running = readWebFile(sb.home);
    await sb.ok(["web", "stop"]);
    // What a reused pid looks like: web.json left behind (a SIGKILLed server) naming a process
    // that is alive and not pu-web.
    const bystander = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const stale = { version: 1, pid: bystander.pid, host: "127.0.0.1", port: running.port, listening: ["127.0.0.1"], secret: running.secret, startedAt: new Date().toISOString() };
      writeFileSync(path.join(sb.home, "web.json"), JSON.stringify(stale), { mode: 0o600 });
      expect(await sb.ok(["web", "stop"])).toBe("pu web is not running\n");
      const fresh = await startWeb(sb);
      expect(fresh.started).toBe(true);
      expect(fresh.pid).not.toBe(bystander.pid);
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
      expect(isProcessAlive(bystander.pid!)).toBe(true);
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  it("--bind 0.0.0.0 --insecure-bind: the link names an address another machine can open, which passes the Host check; a rebinding name is still 403", async () => {
    await sb.ok(["web", "stop"]);
    const wide = await startWeb(sb, ["--bind", "0.0.0.0", "--insecure-bind"]);
    try {
      const link = new URL(wide.url);
      const outside = Object.values(os.networkInterfaces())
        .flat()
        .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
      // Never the literal 0.0.0.0, which no browser elsewhere can open.
      expect(link.hostname).toBe(outside ?? "127.0.0.1");
      // The same server found again with the same flag, not refused as "other settings".
      expect(await startWeb(sb, ["--bind", "0.0.0.0", "--insecure-bind"])).toMatchObject({ started: false, pid: wide.pid });
      expect((await rawRequest(wide.port, "GET", "/", { host: "evil.example:" + wide.port })).status).toBe(403);
      expect((await rawRequest(wide.port, "GET", "/", { host: `0.0.0.0:${wide.port}` })).status).toBe(403);
      const login = await rawRequest(wide.port, "GET", `${link.pathname}${link.search}`, { host: link.host });
      expect(login.status).toBe(303);
      expect((await rawRequest(wide.port, "GET", "/", { host: `127.0.0.1:${wide.port}` })).status).toBe(200);
    } finally {
      await sb.ok(["web", "stop"]);
    }
  });
});
