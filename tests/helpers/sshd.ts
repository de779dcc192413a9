// A real OpenSSH server as a second host for the tests: the distribution's sshd on 127.0.0.1 with
// a temp config, host key and authorized key, logging in as a second local user with its own
// HOME (and so its own PU_HOME). Started in the foreground (-D) so its pid is ours to stop;
// the user is removed, with everything the test left running as that user stopped first by pid.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { waitFor } from "./wait-for.js";

const SSHD = "/usr/sbin/sshd";

/** Why this machine cannot run the sshd tests, or undefined when it can (CI installs openssh-server). */
export function sshdMissing(): string | undefined {
  if (!existsSync(SSHD)) return "no /usr/sbin/sshd (apt-get install openssh-server)";
  if (process.getuid?.() !== 0) return "the sshd tests create a second local user: they need root";
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface SshHost {
  /** `ssh -F configFile alias …` reaches the host as `user`. */
  alias: string;
  configFile: string;
  user: string;
  home: string;
  uid: number;
  /** The ssh argv prefix for a remote command (quoted with pu-core's remoteCommandLine). */
  sshArgs(): string[];
  /** pids of every process the host user runs now. */
  userPids(): number[];
  stop(): Promise<void>;
}

export async function startSshHost(): Promise<SshHost> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pu-sshd-"));
  // sshd reads the authorized keys as the host user: the folder must be reachable by it.
  chmodSync(dir, 0o755);
  const user = `puhost${process.pid}${Math.floor(Math.random() * 1000)}`.slice(0, 30);
  execFileSync("useradd", ["-m", "-s", "/bin/sh", user]);
  // A new account is locked; sshd refuses a locked one even with a key.
  execFileSync("usermod", ["-p", "*", user]);
  const home = execFileSync("sh", ["-c", 'getent passwd "$1" | cut -d: -f6', "sh", user], { encoding: "utf8" }).trim();
  const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8" }).trim());
  // A machine whose TLS to the npm registry goes through a private CA (this one, CI) names that
  // CA in npm's config; the second host gets the same, as a configured machine would have.
  const cafile = execFileSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).trim();
  if (cafile && cafile !== "null" && cafile !== "undefined") {
    writeFileSync(path.join(home, ".npmrc"), `cafile=${cafile}\n`);
    execFileSync("chown", [user, path.join(home, ".npmrc")]);
  }
  let sshd: ChildProcess | undefined;
  const removeUser = () => {
    try {
      execFileSync("userdel", ["-r", "-f", user], { stdio: "ignore" });
    } catch {
      // already gone
    }
  };
  try {
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "host_key")]);
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "client_key")]);
    writeFileSync(path.join(dir, "authorized_keys"), readFileSync(path.join(dir, "client_key.pub")));
    chmodSync(path.join(dir, "authorized_keys"), 0o644);
    const port = await freePort();
    const sshdConfig = path.join(dir, "sshd_config");
    writeFileSync(
      sshdConfig,
      [
        `Port ${port}`,
        "ListenAddress 127.0.0.1",
        `HostKey ${path.join(dir, "host_key")}`,
        `PidFile ${path.join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        `AllowUsers ${user}`,
        "AllowStreamLocalForwarding yes",
        "",
      ].join("\n"),
    );
    execFileSync("mkdir", ["-p", "/run/sshd"]);
    sshd = spawn(SSHD, ["-D", "-f", sshdConfig, "-E", path.join(dir, "sshd.log")], { stdio: "ignore" });
    const knownHosts = path.join(dir, "known_hosts");
    await waitFor("sshd to answer", async () => {
      try {
        const keys = execFileSync("ssh-keyscan", ["-p", String(port), "-t", "ed25519", "127.0.0.1"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
        if (!keys.trim()) return undefined;
        writeFileSync(knownHosts, keys);
        return true;
      } catch {
        return undefined;
      }
    }, 15_000, 100);
    const alias = "pu-test-host";
    const configFile = path.join(dir, "ssh_config");
    // Host keys verified against what the test scanned, never accepted blindly; no password prompts.
    writeFileSync(
      configFile,
      [
        `Host ${alias}`,
        "  HostName 127.0.0.1",
        `  Port ${port}`,
        `  User ${user}`,
        `  IdentityFile ${path.join(dir, "client_key")}`,
        "  IdentitiesOnly yes",
        `  UserKnownHostsFile ${knownHosts}`,
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  LogLevel ERROR",
        "",
      ].join("\n"),
    );
    const started = sshd;
    const userPids = () =>
      execFileSync("sh", ["-c", 'pgrep -u "$1" || true', "sh", user], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean)
        .map(Number);
    return {
      alias,
      configFile,
      user,
      home,
      uid,
      sshArgs: () => ["-F", configFile, alias],
      userPids,
      async stop() {
        // Everything the host user still runs (its daemon, agents, sshd sessions) was started by
        // this test for this user: stop those pids, then sshd, then the user.
        for (const pid of userPids()) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // gone
          }
        }
        started.kill("SIGTERM");
        await waitFor("sshd to stop", async () => (started.exitCode !== null || started.signalCode !== null ? true : undefined), 10_000, 50).catch(() => started.kill("SIGKILL"));
        removeUser();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    sshd?.kill("SIGKILL");
    removeUser();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
