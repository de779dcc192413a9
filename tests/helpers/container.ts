// A real podman container as a host for the tests. No image registry is reachable here, so the
// container's root is an overlay of this machine's own root (`--rootfs /:O`: it sees the same
// node, git and installed pu, and what it writes stays in the overlay), with the host root it
// is given bound in so the test can read what the host's daemon wrote. This machine withholds
// CAP_SYS_RESOURCE and mounts cgroups in hybrid mode, so the file and process limits are set
// below the current ones and the runtime is runc with cgroupfs (crun refuses hybrid cgroups).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";

const PODMAN_GLOBAL = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"];

/** Why this machine cannot run a podman container as a host, or undefined when it can (CI installs podman and runc). */
export function podmanMissing(): string | undefined {
  if (process.getuid?.() !== 0) return "a podman container as a host needs root here";
  for (const program of ["podman", "runc"]) {
    if (spawnSync("sh", ["-c", 'command -v "$1" || test -x "/usr/sbin/$1"', "sh", program]).status !== 0) return `no ${program} (apt-get install podman runc)`;
  }
  return undefined;
}

export interface Container {
  name: string;
  /** What `pu host add NAME --exec …` is given: `podman exec -i NAME`. */
  exec: string;
  stop(): void;
}

/** Starts a container named `name` (removed first if a crashed run left it) with `root` bound in at the same path. */
export function startContainer(name: string, root: string): Container {
  mkdirSync(root, { recursive: true });
  spawnSync("podman", ["rm", "-f", "-t", "0", name], { stdio: "ignore" });
  execFileSync(
    "podman",
    [...PODMAN_GLOBAL, "run", "-d", "--name", name, "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "-v", `${root}:${root}`, "--rootfs", "/:O", "sleep", "infinity"],
    { stdio: ["ignore", "ignore", "pipe"], timeout: 120_000 },
  );
  return {
    name,
    exec: `podman exec -i ${name}`,
    // Everything the test started in it (the host's daemon, its agents) ends with it.
    stop: () => void spawnSync("podman", ["rm", "-f", "-t", "0", name], { stdio: "ignore", timeout: 60_000 }),
  };
}
