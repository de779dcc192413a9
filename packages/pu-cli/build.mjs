// Bundles the CLI for `bin/pu` (start-up time is the CLI's main cost; see bench/status.mjs).
// `tsc` still type-checks and emits dist/*.js + declarations (the package's `exports`); this
// adds dist/pu.cjs, its V8 code cache (pu.cjs.cache) and its staleness witnesses (pu.cjs.inputs).
//
// Why one CommonJS file and not ES modules with a chunk per command (both were measured,
// `pu status --json` against a running daemon, medians of 40 runs interleaved with `node -e 0`):
//   tsc output, module by module ........ 2.0×   node -e 0
//   esbuild ESM, --splitting ............ 1.6×
//   esbuild CJS, one file ............... 1.4×
//   esbuild CJS + V8 code cache ......... 1.2×
// Node 20's ES module loader reads every file through promises and has no code cache, while a
// script compiled with `vm.Script` can reuse V8's cached bytecode. Commands stay lazy: each
// command module is only evaluated when `command-table.ts` imports it, and V8 compiles a
// function only when it first runs.
//
// Later steps, each described where it is made: the code cache comes from a whole status round
// trip, clipanion's stdio is lazy, pu-ipc's clock skips perf_hooks (all below), hello goes out
// before clipanion loads (cli.ts), and bin/pu exits once its output is written. Together they
// took the CLI's own CPU time over `node -e 0` from ~16-18 ms to ~12 ms (child rusage, medians
// of 50 interleaved runs).
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { writeBundleWitnesses } from "../../scripts/bundle-witnesses.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const bundlePath = path.join(here, "dist", "pu.cjs");
const cachePath = `${bundlePath}.cache`;
const inputsPath = `${bundlePath}.inputs`;
const vendorPath = path.join(here, "dist", "pu-vendor.cjs");
const vendorCachePath = `${vendorPath}.cache`;

/**
 * zod and yaml go into a bundle of their own (pu-vendor.cjs), loaded the first time a command
 * needs one of them: `pu status`, `attach`, `send`, `logs` and `kill` parse no schema and no
 * YAML. Inside pu.cjs they were 570 of its 834 KB, and zod's namespaces alone defined ~1,000
 * export getters at load (esbuild hoists a namespace's getters to the bundle's top level even
 * when the module itself is initialised lazily): ~5 ms of every command's start-up, measured
 * with the bundle loaded in-process (read 2.0 → 0.6 ms, compile with the cache 2.3 → 1.2 ms, top
 * level 3.2 → 0.9 ms). pu.cjs's own wrapper answers these two names from the vendor bundle
 * (`vendorLoader` below).
 */
const VENDORED = ["zod", "yaml"];

/**
 * The start of pu.cjs's wrapper: esbuild writes each external import as a plain
 * `require(name)`, so the wrapper's own `require` answers the vendored names from
 * pu-vendor.cjs (once, through the runCached bin/pu passes in) and passes every other name to Node's.
 */
const vendorLoader = `let puVendor;
const require = (id) => (${JSON.stringify(VENDORED)}.includes(id) ? (puVendor ??= loadPuVendor())[id] : nodeRequire(id));
function loadPuVendor() {
  return runCached(nodeRequire("node:path").join(__dirname, "pu-vendor.cjs"), nodeRequire).exports;
}`;
function vendoredExternal() {
  const bare = new RegExp(`^(${VENDORED.join("|")})$`);
  return {
    name: "vendored-external",
    setup(b) {
      b.onResolve({ filter: bare }, (args) => ({ path: args.path, external: true }));
    },
  };
}

/**
 * clipanion and typanion ship an ES module (`x.mjs`) next to each CommonJS file (`x.js`) but
 * point `main` (and clipanion's `lib/platform` folder) at the CommonJS. Taking the ESM lets
 * esbuild drop what pu never uses. (clipanion's ESM keeps one lazy `require("async_hooks")`,
 * reached only with `enableCapture`, which pu never sets.)
 */
function preferEsmSiblings(packages) {
  const inPackage = new RegExp(`[/\\\\]node_modules[/\\\\](${packages.join("|")})[/\\\\]`);
  const bare = new RegExp(`^(${packages.join("|")})$`);
  return {
    name: "prefer-esm-siblings",
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === "prefer-esm") return undefined;
        if (!bare.test(args.path) && !(args.path.startsWith(".") && inPackage.test(args.importer))) return undefined;
        const resolved = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: "prefer-esm",
        });
        if (resolved.errors.length > 0 || !resolved.path.endsWith(".js")) return resolved;
        const esm = `${resolved.path.slice(0, -3)}.mjs`;
        return existsSync(esm) ? { ...resolved, path: esm } : resolved;
      });
    },
  };
}

/**
 * clipanion's Cli reads process.stdin, stdout and stderr when its module loads (its static
 * `defaultContext`) and copies them into every command's context. Touching process.stdin
 * creates the stream: a net.Socket for a pipe, a tty.ReadStream, or for a file or /dev/null an
 * fs.ReadStream, which loads fs/promises: `pu status` with stdin from /dev/null spent ~4 ms of
 * CPU on it. pu's commands use process.stdin themselves (clipanion's context only hands the
 * streams on), so the context's streams become getters, read only when something asks.
 * Every edit must match exactly once: a clipanion that changed fails the build instead of
 * silently losing the edit.
 */
function lazyClipanionContext() {
  const edits = [
    [
      "    stdin: process.stdin,\n    stdout: process.stdout,\n    stderr: process.stderr,\n    colorDepth: getDefaultColorDepth(),\n",
      "    get stdin() { return process.stdin; },\n    get stdout() { return process.stdout; },\n    get stderr() { return process.stderr; },\n    get colorDepth() { return getDefaultColorDepth(); },\n",
    ],
    [
      "        const context = {\n            ...Cli.defaultContext,\n            ...userContext,\n        };\n        switch",
      "        const context = lazyMergeContext(Cli.defaultContext, userContext);\n        switch",
    ],
    [
      "        const context = {\n            ...Cli.defaultContext,\n            ...userContext,\n        };\n        const colored",
      "        const context = lazyMergeContext(Cli.defaultContext, userContext);\n        const colored",
    ],
  ];
  const helper = "\nfunction lazyMergeContext(defaults, user) {\n    return Object.defineProperties({}, { ...Object.getOwnPropertyDescriptors(defaults), ...Object.getOwnPropertyDescriptors(user ?? {}) });\n}\n";
  return {
    name: "lazy-clipanion-context",
    setup(b) {
      b.onLoad({ filter: /[/\\]clipanion[/\\]lib[/\\]advanced[/\\]Cli\.mjs$/ }, async (args) => {
        let text = await readFile(args.path, "utf8");
        for (const [from, to] of edits) {
          const at = text.indexOf(from);
          if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`lazy-clipanion-context: ${args.path} no longer matches the expected source`);
          text = text.replace(from, to);
        }
        return { contents: text + helper, loader: "js" };
      });
    },
  };
}

for (const file of [cachePath, inputsPath, vendorCachePath]) rmSync(file, { force: true });
const { metafile } = await build({
  absWorkingDir: here,
  entryPoints: ["src/cli.ts"],
  outfile: bundlePath,
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  // The daemon is a separate process the CLI only locates and spawns; never bundle it.
  external: ["@pu/engine", "@pu/engine/*"],
  plugins: [preferEsmSiblings(["clipanion", "typanion"]), lazyClipanionContext(), vendoredExternal()],
  // `import("node:child_process")` becomes a lazy require: a vm.Script has no ESM loader hook.
  supported: { "dynamic-import": false },
  // The file is one function expression, compiled by bin/pu's runCached with vm.Script (so V8's
  // code cache applies) and called with CommonJS's module arguments and runCached itself.
  // daemon-client.ts finds bin/pu and the daemon through import.meta, which a CommonJS bundle
  // does not have: these stand in for it.
  // pu-ipc's client times requests out with performance.now(); Node's global `performance` loads
  // perf_hooks (nine modules, ~0.6 ms of every command) the first time it is read, so the bundle
  // gets the same monotonic milliseconds from process.hrtime (only differences are ever used).
  banner: {
    js: [
      "(function (exports, nodeRequire, module, __filename, __dirname, runCached) {\"use strict\";",
      vendorLoader,
      'const __puImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
      "const __puPerformanceNow = () => Number(process.hrtime.bigint()) / 1e6;",
      'const __puImportMetaResolve = (specifier) => require("node:url").pathToFileURL(require("node:module").createRequire(__filename).resolve(specifier)).href;',
    ].join("\n"),
  },
  footer: { js: "})" },
  define: { "import.meta.url": "__puImportMetaUrl", "import.meta.resolve": "__puImportMetaResolve", "performance.now": "__puPerformanceNow" },
  minify: true,
  sourcemap: "external",
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});

// The vendor bundle: one module whose exports are zod's and yaml's namespaces, resolved from
// pu-core (the package that depends on them), wrapped like pu.cjs for bin/pu's runCached.
await build({
  absWorkingDir: here,
  stdin: {
    contents: VENDORED.map((name) => `export * as ${name} from "${name}";`).join("\n"),
    resolveDir: path.join(here, "..", "pu-core"),
    sourcefile: "pu-vendor-entry.js",
  },
  outfile: vendorPath,
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  banner: { js: "(function (exports, require, module, __filename, __dirname) {\"use strict\";" },
  footer: { js: "})" },
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});

// What bin/pu compares the bundle with at start-up (scripts/bundle-witnesses.mjs).
writeBundleWitnesses(bundlePath, "pu-cli", path.join(here, "dist", "cli.js"), metafile, here);

// V8's code cache for the bundle, made after a whole `pu status --json` (the command pu's
// benchmark and scripts poll) and a `pu status` (the table people read) against a stand-in daemon: pu-ipc's own server, answering hello
// and status with a small report. The cache then holds what every daemon command runs first
// (connect, hello, msgpack encode and decode, the reply) as well as clipanion and the status
// command; a cache made from a run stopped at "no pu project" left those to compile at run
// time (msgpackr's encoder alone ~1.5 ms). Measured against a cache made after `pu --help`
// (every command module compiled, a 270 KB cache): the smaller cache loads faster, and any
// other command compiles only its own module. V8 rejects the cache on its own when the Node
// version, V8 flags or source differ, and bin/pu then compiles from source: a stale or missing
// cache costs time, never correctness. Made in a child so nothing of this build script's own
// state leaks into it, with its own temp PU_HOME so no real daemon is involved.
const makeCache = `
const fs = require("node:fs"), os = require("node:os"), path = require("node:path");
const [bundle, out, serverModule, pathsModule, vendorBundle, vendorOut] = process.argv.slice(1);
const { runCached } = require(path.join(path.dirname(bundle), "..", "bin", "pu"));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "pu-cli-build-"));
const home = path.join(scratch, "home");
const project = path.join(scratch, "project");
const sampleReport = (projectRoot) => ({
  projectRoot,
  worktrees: {
    "wt-build": {
      id: "wt-build", name: "build", path: path.join(projectRoot, ".pu", "worktrees", "wt-build"), branch: "pu/build",
      baseBranch: "main", status: "active", createdAt: "2026-01-01T00:00:00.000Z", mergedAt: null,
      agents: { "ag-build": { id: "ag-build", name: "build", agentType: "shell", pid: 4242, status: "waiting", idleSeconds: 75, exitCode: null, cols: 120, rows: 40, command: ["sh"], tags: [], startedAt: "2026-01-01T00:00:00.000Z" } },
    },
  },
  agents: { "ag-root": { id: "ag-root", name: "root", agentType: "claude", pid: 4241, status: "streaming", idleSeconds: 0, exitCode: null, cols: 120, rows: 40, command: ["sh"], tags: [], startedAt: "2026-01-01T00:00:00.000Z" } },
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
});
(async () => {
  fs.mkdirSync(home, { mode: 0o700 });
  const { socketPath, manifestPath } = await import(pathsModule);
  const { createServer } = await import(serverModule);
  let server = createServer({ socketPath: socketPath(home), handlers: { status: async (req) => sampleReport(req.projectRoot) } });
  try {
    await server.listen();
    fs.mkdirSync(path.dirname(manifestPath(project)), { recursive: true });
    fs.writeFileSync(manifestPath(project), "{}");
  } catch (error) {
    // Without the stand-in the project stays uninitialized, so the run stops before it could
    // start a real daemon; the cache then covers less, and only start-up time suffers.
    console.warn("pu-cli build: no stand-in daemon for the code cache (" + error.message + ")");
    await server.close().catch(() => {});
    server = undefined;
  }
  try {
    const { exports: cli, script } = runCached(bundle, require, { useCache: false });
    const writeErr = process.stderr.write.bind(process.stderr);
    let errors = "";
    process.stdout.write = () => true;
    process.stderr.write = (chunk) => ((errors += chunk), true);
    process.env.PU_HOME = home;
    // Both forms: the table's code (rows, padding, durations) is otherwise compiled on every run.
    const codes = [];
    for (const form of [["--json"], []]) codes.push(await cli.main(["status", ...form, "--project", project]));
    process.stderr.write = writeErr;
    if (server && codes.some((code) => code !== 0)) {
      console.warn("pu-cli build: pu status against the stand-in daemon exited " + codes.join(", ") + " (" + errors.trim() + "); the code cache covers less");
    }
    fs.writeFileSync(out + ".tmp", script.createCachedData());
    fs.renameSync(out + ".tmp", out);
    // The vendor bundle's cache, after a small schema parse and a YAML parse (what a command
    // that reads a config file or a definition runs first).
    const { exports: vendor, script: vendorScript } = runCached(vendorBundle, require, { useCache: false });
    const { zod: { z }, yaml } = vendor;
    z.object({ name: z.string(), tags: z.array(z.string()).optional() }).strict().safeParse(yaml.parse("{ name: pu, tags: [a] }"));
    fs.writeFileSync(vendorOut + ".tmp", vendorScript.createCachedData());
    fs.renameSync(vendorOut + ".tmp", vendorOut);
  } finally {
    await server?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
})().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`;
const made = spawnSync(
  process.execPath,
  ["-e", makeCache, bundlePath, cachePath, import.meta.resolve("@pu/ipc/server"), import.meta.resolve("@pu/core/paths"), vendorPath, vendorCachePath],
  { stdio: ["ignore", "ignore", "inherit"] },
);
if (made.status !== 0) throw new Error(`making the code cache failed (exit ${made.status})`);
