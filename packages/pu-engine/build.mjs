// Bundles the daemon for `bin/pu-engine` (dist/pu-engine.cjs) and makes V8's code cache for it
// (dist/pu-engine.cjs.cache). `tsc` still emits dist/*.js and the declarations (the package's
// `exports`, and what the bundle is made from).
//
// Why: a daemon that is not running is started by the first `pu` command (`pu status` after a
// boot), which waits for it. Node 20's ES module loader took 360–440 ms to load the ~190 modules
// of the engine, pu-core and pu-ipc plus their dependencies, one file at a time. The same code as
// one ES module loaded in 135–160 ms, most of it compiling; Node 20 keeps no code cache for ES
// modules, so the bundle is one CommonJS function run through vm.Script with a cache, which loads
// in 73–77 ms (bench/RESULTS.md, `pu status --json` cold).
//
// Left out of the bundle: node-pty and better-sqlite3 (native bindings, found beside their own
// package), and @pydantic/genai-prices (a large price table, required only when a cost is first
// asked for).
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { DAEMON_NODE_FLAGS } from "@pu/core/daemon-process";
import { writeBundleWitnesses } from "../../scripts/bundle-witnesses.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const engineDist = path.join(here, "dist");
const coreDist = path.join(here, "..", "pu-core", "dist");

/**
 * A few modules find files beside themselves through `import.meta.url` (pu-core's plan
 * templates, the packages pu-core loads with `createRequire`, the CLI's bin beside the engine's).
 * In a bundle that URL would be the bundle's, so each such module gets its own URL back: the
 * engine's modules relative to the bundle (both are in dist/), pu-core's relative to wherever
 * `@pu/core` resolves from the engine — the workspace's link here, an installed copy on a host.
 * No build machine's path is written into the bundle.
 */
function ownModuleUrls() {
  return {
    name: "own-module-urls",
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, async (args) => {
        const source = await readFile(args.path, "utf8");
        if (!source.includes("import.meta.url")) return undefined;
        let own;
        if (isInside(engineDist, args.path)) {
          own = `new URL(${JSON.stringify(`./${toUrlPath(path.relative(engineDist, args.path))}`)}, __puBundleUrl).href`;
        } else if (isInside(coreDist, args.path)) {
          own = `new URL(${JSON.stringify(`./${toUrlPath(path.relative(coreDist, args.path))}`)}, __puCoreUrl).href`;
        } else {
          throw new Error(`${args.path} uses import.meta.url and is neither the engine's nor pu-core's: say here where it lives`);
        }
        return { contents: source.replaceAll("import.meta.url", `(${own})`), loader: "js" };
      });
    },
  };
}

function isInside(dir, file) {
  const relative = path.relative(dir, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
}

function toUrlPath(relative) {
  return relative.split(path.sep).join("/");
}

const bundlePath = path.join(engineDist, "pu-engine.cjs");
const cachePath = `${bundlePath}.cache`;
// No cache of an earlier bundle outlives it (V8 compares a cache with its source's length only),
// and no file of the ES module bundle this one replaced is left behind.
for (const file of [cachePath, `${bundlePath}.inputs`, path.join(engineDist, "pu-engine.mjs"), path.join(engineDist, "pu-engine.mjs.inputs")]) {
  rmSync(file, { force: true });
}
const { metafile, warnings } = await build({
  absWorkingDir: here,
  entryPoints: [path.join(engineDist, "daemon.js")],
  outfile: bundlePath,
  metafile: true,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["node-pty", "better-sqlite3", "@pydantic/genai-prices"],
  plugins: [ownModuleUrls()],
  // The price table's `import()` becomes a lazy require (its package has a CommonJS build): a
  // vm.Script has no ES module loader to hand a dynamic import to.
  supported: { "dynamic-import": false },
  // One function expression, which bin/pu-engine compiles with vm.Script (so V8's code cache
  // applies) and calls with CommonJS's module arguments: `__filename` is the bundle's path.
  banner: {
    js: [
      '(function (exports, require, module, __filename, __dirname) {"use strict";',
      'const __puBundleUrl = require("node:url").pathToFileURL(__filename).href;',
      'const __puCoreUrl = require("node:url").pathToFileURL(require.resolve("@pu/core/errors")).href;',
    ].join("\n"),
  },
  footer: { js: "})" },
  logLevel: "warning",
});
// esbuild only warns about what a CommonJS bundle cannot do (an `import.meta` left in a module,
// say); a daemon bundle with any of it must not ship.
if (warnings.length > 0) throw new Error(`the daemon's bundle has ${warnings.length} warning(s); see above`);

// What bin/pu-engine compares the bundle with at start-up (scripts/bundle-witnesses.mjs). A
// witness that is not there (an installed copy, laid out differently) does not count against it.
writeBundleWitnesses(bundlePath, "pu-engine", path.join(engineDist, "daemon.js"), metafile, here);

// V8's code cache, made by a Node started with the daemon's own flags (V8 rejects a cache made
// under other flags) that evaluates the bundle through bin/pu-engine's loader, as the daemon does.
const maker = [
  'const { writeFileSync, renameSync } = require("node:fs");',
  `const { runBundle } = require(${JSON.stringify(path.join(here, "bin", "pu-engine"))});`,
  "const { script } = runBundle({ useCache: false });",
  `writeFileSync(${JSON.stringify(`${cachePath}.tmp`)}, script.createCachedData());`,
  `renameSync(${JSON.stringify(`${cachePath}.tmp`)}, ${JSON.stringify(cachePath)});`,
].join("\n");
const made = spawnSync(process.execPath, [...DAEMON_NODE_FLAGS, "-e", maker], { stdio: "inherit" });
if (made.status !== 0) throw new Error(`making the daemon's code cache failed (exit ${made.status ?? made.signal})`);
