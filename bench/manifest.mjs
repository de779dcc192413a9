// Figure 5: manifest updates per second with 8 writer processes contending for
// one project's manifest (each update: take the lock, read, +1, atomic write,
// release). Afterwards the counter must equal writers × updates: no lost update.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO, disown, figure, isAlive, killOwned, loadManifestStore, own, summarize, tempWorkspace } from "./lib.mjs";

const WRITER = path.join(REPO, "bench/manifest-writer.mjs");

/** Resolves when `line` appears on the child's stdout; rejects if it exits first. */
function waitForLine(child, line) {
  return new Promise((resolve, reject) => {
    let buffered = "";
    const onData = (chunk) => {
      buffered += chunk;
      if (buffered.split("\n").includes(line)) {
        child.stdout.off("data", onData);
        child.off("exit", onExit);
        resolve();
      }
    };
    const onExit = (code) => reject(new Error(`manifest writer exited with ${code} before "${line}"`));
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", onData);
    child.once("exit", onExit);
  });
}

async function oneRun(root, writers, updatesEach) {
  const children = [];
  try {
    for (let i = 0; i < writers; i++) {
      const child = spawn(process.execPath, [WRITER, root, String(updatesEach)], { stdio: ["pipe", "pipe", "inherit"] });
      own(child.pid);
      children.push(child);
    }
    await Promise.all(children.map((c) => waitForLine(c, "ready")));
    const done = Promise.all(children.map((c) => waitForLine(c, "done")));
    const start = performance.now();
    for (const c of children) c.stdin.write("go\n");
    await done;
    return (performance.now() - start) / 1000;
  } finally {
    for (const c of children) {
      if (isAlive(c.pid)) await killOwned(c.pid);
      disown(c.pid);
    }
  }
}

export async function run({ runs = 5, writers = 8, updatesEach = 50 } = {}) {
  const ws = await tempWorkspace("manifest");
  try {
    const { ManifestStore } = await loadManifestStore();
    const store = new ManifestStore();
    const rates = [];
    const finals = [];
    for (let r = 0; r < runs; r++) {
      const root = path.join(ws.dir, `project-${r}`);
      mkdirSync(root);
      await store.create(root);
      const seconds = await oneRun(root, writers, updatesEach);
      rates.push((writers * updatesEach) / seconds);
      // Read the file itself, not through the store: what is on disk is what counts.
      finals.push(JSON.parse(readFileSync(path.join(root, ".pu/manifest.json"), "utf8")).benchCounter);
    }
    const expected = writers * updatesEach;
    const lost = finals.map((n) => expected - n);
    const value = summarize(rates);
    return [
      figure({
        id: "manifest.updates_per_s",
        name: `Manifest updates/s, ${writers} concurrent writer processes`,
        unit: "updates/s",
        value,
        notes: `${writers} × ${updatesEach} increments per run`,
      }),
      figure({
        id: "manifest.lost_updates",
        name: "Manifest lost updates (expected − final counter)",
        unit: "updates",
        value: summarize(lost),
        target: "0",
        met: lost.every((n) => n === 0),
        notes: `final counters: ${finals.join(", ")} (expected ${expected} each)`,
      }),
    ];
  } finally {
    await ws.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run({ runs: Number(process.env.RUNS ?? 5), updatesEach: Number(process.env.N ?? 50) });
  for (const r of rows) console.log(r.id, r.value.median.toFixed(1), `[${r.value.min.toFixed(1)}–${r.value.max.toFixed(1)}]`, r.notes);
}
