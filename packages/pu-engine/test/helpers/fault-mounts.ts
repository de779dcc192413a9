// Real read-only and full filesystems for the disk fault tests. Root ignores file
// permissions, so chmod cannot make `.pu/` read-only; a read-only bind mount and a
// tiny tmpfs can. Every mount made here is undone by unmountAll (lazily, so a
// process still holding a file there cannot keep it mounted).
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const mounted: string[] = [];

function run(command: string, args: string[]): void {
  execFileSync(command, args, { stdio: ["ignore", "pipe", "pipe"] });
}

/** Why mounts cannot be used here, or null when a tmpfs mount works. */
export function mountUnavailableReason(): string | null {
  if (process.platform !== "linux") return `mounts need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "mounts need root";
  const probe = mkdtempSync(path.join(os.tmpdir(), "pu-mount-probe-"));
  try {
    run("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]);
    run("umount", [probe]);
    return null;
  } catch (err) {
    return `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim()}`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** Makes `dir` read-only in place (a read-only bind mount of itself). */
export function mountReadOnly(dir: string): void {
  run("mount", ["--bind", dir, dir]);
  mounted.push(dir);
  run("mount", ["-o", "remount,bind,ro", dir]);
}

/** Puts a tmpfs of `sizeBytes` over `dir`, carrying its current contents over. */
export function mountTmpfsOver(dir: string, sizeBytes: number): void {
  const saved = mkdtempSync(path.join(os.tmpdir(), "pu-mount-copy-"));
  try {
    cpSync(dir, saved, { recursive: true });
    run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0755`, "tmpfs", dir]);
    mounted.push(dir);
    for (const entry of readdirSync(saved)) cpSync(path.join(saved, entry), path.join(dir, entry), { recursive: true });
  } finally {
    rmSync(saved, { recursive: true, force: true });
  }
}

/** Writes into `dir` until the filesystem refuses (ENOSPC): no byte is left for anyone. */
export function fillUp(dir: string): void {
  const chunk = Buffer.alloc(4096, 0x66);
  for (let i = 0; ; i++) {
    try {
      writeFileSync(path.join(dir, `filler-${i}`), chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOSPC") break;
      throw err;
    }
  }
  // Small files may still fit in the last partial page; top up byte-sized files too.
  for (let i = 0; ; i++) {
    try {
      writeFileSync(path.join(dir, `filler-tail-${i}`), chunk.subarray(0, 1));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOSPC") return;
      throw err;
    }
  }
}

/** Undoes every mount this helper made, newest first. */
export function unmountAll(): void {
  while (mounted.length > 0) {
    const dir = mounted.pop() as string;
    try {
      run("umount", ["-l", dir]);
    } catch {
      // already gone
    }
  }
}
