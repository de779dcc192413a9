// pu's two bins run a bundle (dist/pu.cjs, dist/pu-engine.cjs) unless it is older than a file it
// was made from: a developer who ran `tsc` alone after an edit, or rebuilt pu-core without the CLI,
// must get the code they just built, not yesterday's bundle. Each bin is run here from a copy beside
// stand-in dist files that print which one ran; the real builds' witness lists are checked to
// name a file of every workspace package they bundled.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DAEMON_NODE_FLAGS } from "@pu/core/daemon-process";
import { afterAll, describe, expect, it } from "vitest";

const packages = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "packages");
const made: string[] = [];

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

interface BinLayout {
  /** Runs the copied bin and returns what the entry it chose printed. */
  run(): string;
  /** Sets a dist file's mtime, seconds relative to the bundle's. */
  age(file: string, secondsAfterBundle: number): void;
  writeInputs(lines: string[] | undefined): void;
  remove(file: string): void;
  /** Makes the bundle's V8 code cache through the bin's own loader, dated as the bundle is. */
  makeCache(): void;
  /** Rewrites the bundle with `from` replaced by `to` (the same length), dated after its cache. */
  edit(from: string, to: string): void;
}

/**
 * A copy of `packages/<name>/bin/<bin>` in a temp package whose dist holds a bundle and a
 * module-by-module entry that print "bundle" and "modules", plus two witnesses.
 */
function layout(
  name: string,
  bin: string,
  bundleFile: string,
  bundleSource: string,
  entryFile: string,
  entrySource: string,
  /** Node code that evaluates the bundle through the bin's loader (BIN, BUNDLE) and leaves its Script in `script`. */
  loadForCache: string,
): BinLayout {
  const root = mkdtempSync(path.join(tmpdir(), "pu-bundle-staleness-"));
  made.push(root);
  mkdirSync(path.join(root, "bin"));
  mkdirSync(path.join(root, "dist"));
  mkdirSync(path.join(root, "other", "dist"), { recursive: true });
  writeFileSync(path.join(root, "package.json"), JSON.stringify({ type: "module" }));
  // Both bins are CommonJS, said by their folder's package.json.
  for (const file of [bin, "package.json"]) copyFileSync(path.join(packages, name, "bin", file), path.join(root, "bin", file));
  const dist = (file: string) => path.join(root, "dist", file);
  writeFileSync(dist(bundleFile), bundleSource);
  writeFileSync(dist(entryFile), entrySource);
  writeFileSync(path.join(root, "other", "dist", "index.js"), "");
  const bundleTime = statSync(dist(bundleFile)).mtime.getTime() / 1000;
  const layoutApi: BinLayout = {
    run: () => execFileSync(process.execPath, [path.join(root, "bin", bin)], { encoding: "utf8", timeout: 30_000 }).trim(),
    age: (file, seconds) => utimesSync(dist(file), bundleTime + seconds, bundleTime + seconds),
    writeInputs: (lines) => {
      if (lines === undefined) rmSync(dist(`${bundleFile}.inputs`), { force: true });
      else writeFileSync(dist(`${bundleFile}.inputs`), lines.join("\n") + "\n");
    },
    remove: (file) => rmSync(dist(file), { force: true }),
    makeCache: () => {
      const maker = `const BIN = ${JSON.stringify(path.join(root, "bin", bin))}; const BUNDLE = ${JSON.stringify(dist(bundleFile))};\n${loadForCache}\nrequire("node:fs").writeFileSync(BUNDLE + ".cache", script.createCachedData());`;
      execFileSync(process.execPath, ["-e", maker], { timeout: 30_000 });
      layoutApi.age(`${bundleFile}.cache`, 0);
    },
    edit: (from, to) => {
      writeFileSync(dist(bundleFile), readFileSync(dist(bundleFile), "utf8").replace(from, to));
      layoutApi.age(bundleFile, 5);
    },
  };
  utimesSync(dist(bundleFile), bundleTime, bundleTime);
  layoutApi.age(entryFile, -60);
  layoutApi.age("../other/dist/index.js", -60);
  layoutApi.writeInputs([entryFile, "../other/dist/index.js"]);
  return layoutApi;
}

const bins = [
  {
    title: "bin/pu (the CLI)",
    make: () =>
      layout(
        "pu-cli",
        "pu",
        "pu.cjs",
        '(function (exports) { const word = "bundle"; exports.main = async () => { console.log(word); return 0; }; })',
        "cli.js",
        'export async function main() { console.log("modules"); return 0; }',
        "const { script } = require(BIN).runCached(BUNDLE, require, { useCache: false });",
      ),
    bundleFile: "pu.cjs",
    entryFile: "cli.js",
  },
  {
    title: "bin/pu-engine (the daemon)",
    make: () =>
      layout(
        "pu-engine",
        "pu-engine",
        "pu-engine.cjs",
        '(function (exports) { const word = "bundle"; exports.runDaemonFromArgv = async () => { console.log(word); }; })',
        "daemon.js",
        'export async function runDaemonFromArgv() { console.log("modules"); }',
        "const { script } = require(BIN).runBundle({ useCache: false });",
      ),
    bundleFile: "pu-engine.cjs",
    entryFile: "daemon.js",
  },
];

describe.each(bins)("$title", ({ make, bundleFile, entryFile }) => {
  it("runs the bundle while every witness is older than it", () => {
    expect(make().run()).toBe("bundle");
  });

  it("runs the module-by-module build once its own entry or another package's file is newer", () => {
    const own = make();
    own.age(entryFile, 5);
    expect(own.run()).toBe("modules");
    const other = make();
    other.age("../other/dist/index.js", 5);
    expect(other.run()).toBe("modules");
  });

  it("runs the bundle when its witness list is missing, or names a file that is not there (an installed copy)", () => {
    const noList = make();
    noList.writeInputs(undefined);
    expect(noList.run()).toBe("bundle");
    const elsewhere = make();
    elsewhere.writeInputs([entryFile, "../not-installed/dist/index.js"]);
    expect(elsewhere.run()).toBe("bundle");
  });

  it("does not run a code cache older than its bundle: V8 would take it for a same-length edit", () => {
    const cached = make();
    cached.makeCache();
    expect(cached.run()).toBe("bundle");
    cached.edit('"bundle"', '"BUNDLE"');
    expect(cached.run()).toBe("BUNDLE");
  });

  it("runs the module-by-module build when there is no bundle", () => {
    const bare = make();
    bare.remove(bundleFile);
    expect(bare.run()).toBe("modules");
  });
});

describe("the witness lists the builds write", () => {
  it.each([
    ["pu-cli", "pu.cjs", "cli.js", ["pu-core", "pu-ipc"]],
    ["pu-engine", "pu-engine.cjs", "daemon.js", ["pu-core", "pu-ipc"]],
  ])("%s's %s names its own entry and a built file of each bundled package, older than the bundle", (name, bundleFile, entryFile, bundled) => {
    const dist = path.join(packages, name, "dist");
    const lines = readFileSync(path.join(dist, `${bundleFile}.inputs`), "utf8").split("\n").filter(Boolean);
    expect(lines[0]).toBe(entryFile);
    for (const other of bundled) expect(lines.some((line) => line.startsWith(`../../${other}/dist/`))).toBe(true);
    const bundleTime = statSync(path.join(dist, bundleFile)).mtimeMs;
    for (const line of lines) expect(statSync(path.resolve(dist, line)).mtimeMs).toBeLessThanOrEqual(bundleTime);
  });
});

describe("the daemon's code cache", () => {
  it("is accepted by a Node started with the daemon's flags, and the bundle it runs exports the daemon", () => {
    const bin = path.join(packages, "pu-engine", "bin", "pu-engine");
    const probe = `const r = require(${JSON.stringify(bin)}).runBundle(); console.log(JSON.stringify({ rejected: r.script.cachedDataRejected, entry: typeof r.exports.runDaemonFromArgv }));`;
    const withFlags = JSON.parse(execFileSync(process.execPath, [...DAEMON_NODE_FLAGS, "-e", probe], { encoding: "utf8", timeout: 30_000 }));
    expect(withFlags).toEqual({ rejected: false, entry: "function" });
    // Other V8 flags than the daemon's: the cache is refused, and the bundle still runs.
    const without = JSON.parse(execFileSync(process.execPath, ["-e", probe], { encoding: "utf8", timeout: 30_000 }));
    expect(without).toEqual({ rejected: true, entry: "function" });
  });
});
