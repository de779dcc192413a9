// Where a project lives on a host, how git reaches it through the host's transport, and what the
// control plane's records and status words say about agents placed there.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { isPuError } from "../src/errors.js";
import { hostDaemonArgv, hostGitUrl, hostMirrorPath, newHostRecord, sshControlArgv, transportArgv } from "../src/hosts-file.js";
import { parseRemoteProjectsFile } from "../src/remote-projects-file.js";
import { statusLabel } from "../src/status-label.js";

const sshHost = newHostRecord({ name: "box", transport: { kind: "ssh", destination: "me@box", options: ["Port=2222"] }, root: "/srv/pu" }, new Date());

describe("hostMirrorPath", () => {
  it("puts each project under ROOT/projects, named for its folder, never shared by two projects of the same name", () => {
    const a = hostMirrorPath(sshHost, "/home/me/work/app");
    const b = hostMirrorPath(sshHost, "/home/me/other/app");
    expect(a.startsWith("/srv/pu/projects/app-")).toBe(true);
    expect(b.startsWith("/srv/pu/projects/app-")).toBe(true);
    expect(a).not.toBe(b);
    expect(hostMirrorPath(sshHost, "/home/me/work/app")).toBe(a);
  });

  it("keeps only safe characters of the folder's name", () => {
    expect(path.posix.basename(hostMirrorPath(sshHost, "/tmp/my app;$(id)"))).toMatch(/^my_app___id_-[0-9a-f]{10}$/);
  });
});

describe("transportArgv with connection sharing", () => {
  it("adds pu's ControlPath, persistence and keepalives before the destination, never after --", () => {
    const argv = transportArgv(sshHost.transport, ["true"], { controlPath: "/home/me/.pu/ssh/box" });
    const dashDash = argv.indexOf("--");
    expect(argv.slice(0, dashDash)).toEqual(expect.arrayContaining(["ControlMaster=auto", "ControlPath=/home/me/.pu/ssh/box", "ControlPersist=60", "ServerAliveInterval=15"]));
    expect(argv.slice(dashDash)).toEqual(["--", "me@box", "true"]);
    // The person's own options come first, pu's checking ones are still there.
    expect(argv.indexOf("Port=2222")).toBeLessThan(argv.indexOf("ControlMaster=auto"));
    expect(argv).toEqual(expect.arrayContaining(["BatchMode=yes", "StrictHostKeyChecking=yes"]));
  });

  it("asks the master with -O check on the same socket", () => {
    if (sshHost.transport.kind !== "ssh") throw new Error("ssh host expected");
    expect(sshControlArgv(sshHost.transport, "/p/box", "check")).toEqual(["ssh", "-o", "Port=2222", "-o", "ControlPath=/p/box", "-O", "check", "--", "me@box"]);
  });

  it("runs the host's daemon bridge with its home under the root, preferring ROOT/bin/pu", () => {
    const argv = hostDaemonArgv(sshHost);
    expect(argv.at(-1)).toContain("PU_HOME=/srv/pu/home");
    expect(argv.at(-1)).toContain("/srv/pu/bin/pu");
    expect(argv.at(-1)).toContain("daemon stdio");
  });
});

describe("hostGitUrl", () => {
  it("reaches `git upload-pack MIRROR` through the transport with every word intact, spaces and % included (read back by git itself)", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pu-ext-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const record = path.join(dir, "argv");
    // An exec transport that records the argv git's ext helper ran it with, then fails.
    const host = newHostRecord({ name: "rec", transport: { kind: "exec", command: ["/bin/sh", "-c", 'printf "%s\\n" "$@" > "$0"; exit 1', record] }, root: "/srv/pu" }, new Date());
    const mirror = "/srv/pu/projects/a b%20c 100%";
    const url = hostGitUrl(host, "upload-pack", mirror);
    expect(url.startsWith("ext::")).toBe(true);
    const run = spawnSync("git", ["-c", "protocol.ext.allow=always", "ls-remote", url], { cwd: dir, encoding: "utf8" });
    expect(run.status).not.toBe(0);
    expect(readFileSync(record, "utf8").split("\n").slice(0, 3)).toEqual(["git", "upload-pack", mirror]);
  });

  it("is refused by git unless the ext helper is allowed for the command (pu allows it for its own push and fetch only)", () => {
    const url = hostGitUrl(sshHost, "upload-pack", "/srv/pu/projects/x");
    const env = { ...process.env };
    delete env.GIT_ALLOW_PROTOCOL;
    const run = spawnSync("git", ["ls-remote", url], { cwd: os.tmpdir(), encoding: "utf8", env });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/transport 'ext' not allowed/);
  });
});

describe("remote-projects.json", () => {
  it("reads a record with defaults and reports a corrupt one as CONFIG_ERROR naming the file", () => {
    const parsed = parseRemoteProjectsFile(JSON.stringify({ version: 1, projects: [{ host: "box", projectRoot: "/p", mirror: "/srv/pu/projects/p-1", baseBranch: "main" }] }), "/h/remote-projects.json");
    expect(parsed.projects[0]).toMatchObject({ agentIds: [], worktreeIds: [], merged: [], lastReport: null, lastSeenAt: null });
    try {
      parseRemoteProjectsFile("{ nope", "/h/remote-projects.json");
      expect.unreachable();
    } catch (error) {
      expect(isPuError(error) && error.code).toBe("CONFIG_ERROR");
      expect((error as Error).message).toMatch(/remote-projects\.json/);
    }
  });
});

describe("statusLabel of an agent on a host", () => {
  it("keeps the last known words and says the host is unreachable, never guessing broken", () => {
    expect(statusLabel({ status: "waiting", waitingReason: "turn_end", hostState: "unreachable" })).toBe("waiting (done) (host unreachable)");
    expect(statusLabel({ status: "streaming", hostState: "connected" })).toBe("streaming");
  });
});
