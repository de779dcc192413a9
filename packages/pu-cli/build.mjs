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
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const bundlePath = path.join(here, "dist", "pu.cjs");
const cachePath = `${bundlePath}.cache`;
const inputsPath = `${bundlePath}.inputs`;

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

rmSync(cachePath, { force: true });
rmSync(inputsPath, { force: true });
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
  plugins: [preferEsmSiblings(["clipanion", "typanion"])],
  // `import("node:child_process")` becomes a lazy require: a vm.Script has no ESM loader hook.
  supported: { "dynamic-import": false },
  // The file is one function expression, compiled by bin/pu with vm.Script (so V8's code cache
  // applies) and called with CommonJS's module arguments. daemon-client.ts finds bin/pu and the
  // daemon through import.meta, which a CommonJS bundle does not have: these stand in for it.
  banner: {
    js: [
      "(function (exports, require, module, __filename, __dirname) {\"use strict\";",
      'const __puImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
      'const __puImportMetaResolve = (specifier) => require("node:url").pathToFileURL(require("node:module").createRequire(__filename).resolve(specifier)).href;',
    ].join("\n"),
  },
  footer: { js: "})" },
  define: { "import.meta.url": "__puImportMetaUrl", "import.meta.resolve": "__puImportMetaResolve" },
  minify: true,
  sourcemap: "external",
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});

// Files whose being newer than the bundle means it is stale; bin/pu checks them at start-up
// (one stat each) and then runs the module-by-module tsc output instead. tsc rewrites every
// file it emits, so one file per package is enough: this package's dist/cli.js (`tsc` run
// alone after an edit) and one dist file of each bundled workspace package (rebuilt without
// this one).
const witnesses = new Map([["pu-cli", path.join(here, "dist", "cli.js")]]);
for (const input of Object.keys(metafile.inputs)) {
  const m = /^\.\.\/(pu-[^/]+)\/dist\/.+\.js$/.exec(input);
  if (m && !witnesses.has(m[1])) witnesses.set(m[1], path.join(here, input));
}
writeFileSync(inputsPath, [...witnesses.values()].map((file) => path.relative(path.dirname(bundlePath), file)).join("\n") + "\n");

// V8's code cache for the bundle, made after the run `pu status --json` starts with (the
// command pu's benchmark and scripts poll), stopped at "no pu project" before any daemon is
// involved. Measured against a cache made after `pu --help` (every command module compiled,
// a 270 KB cache): the smaller cache loads faster, and any other command compiles only its
// own module. V8 rejects the cache on its own when the Node version, V8 flags or source
// differ, and bin/pu then compiles from source: a stale or missing cache costs time, never
// correctness. Made in a child so nothing of this build script's own state leaks into it.
const makeCache = `
const fs = require("node:fs"), os = require("node:os"), path = require("node:path"), vm = require("node:vm");
const [bundle, out] = process.argv.slice(1);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "pu-cli-build-"));
const script = new vm.Script(fs.readFileSync(bundle, "utf8"), { filename: bundle });
const mod = { exports: {} };
script.runInThisContext()(mod.exports, require, mod, bundle, path.dirname(bundle));
process.stdout.write = process.stderr.write = () => true;
// An uninitialized --project and an empty PU_HOME: the run can never reach or start a daemon.
process.env.PU_HOME = path.join(scratch, "home");
mod.exports
  .main(["status", "--json", "--project", scratch])
  .then(() => {
    fs.writeFileSync(out + ".tmp", script.createCachedData());
    fs.renameSync(out + ".tmp", out);
  })
  .finally(() => fs.rmSync(scratch, { recursive: true, force: true }));
`;
const made = spawnSync(process.execPath, ["-e", makeCache, bundlePath, cachePath], { stdio: ["ignore", "ignore", "inherit"] });
if (made.status !== 0) throw new Error(`making the code cache failed (exit ${made.status})`);
