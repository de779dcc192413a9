// Bundles the daemon for `bin/pu-engine` (dist/pu-engine.mjs). `tsc` still emits dist/*.js and
// the declarations (the package's `exports`, and what the bundle is made from).
//
// Why: a daemon that is not running is started by the first `pu` command (`pu status` after a
// boot), which waits for it. Node 20's ES module loader took 360–440 ms to load the ~190 modules
// of the engine, pu-core and pu-ipc plus their dependencies, one file at a time; the same code as
// one file loads in ≈ 140 ms (bench/RESULTS.md, `pu status --json` cold).
//
// Left out of the bundle: node-pty and better-sqlite3 (native bindings, found beside their own
// package), and @pydantic/genai-prices (a large price table, imported only when a cost is first
// asked for).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
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
          own = `new URL(${JSON.stringify(`./${toUrlPath(path.relative(engineDist, args.path))}`)}, import.meta.url).href`;
        } else if (isInside(coreDist, args.path)) {
          own = `new URL(${JSON.stringify(`./${toUrlPath(path.relative(coreDist, args.path))}`)}, import.meta.resolve("@pu/core/errors")).href`;
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

const bundlePath = path.join(engineDist, "pu-engine.mjs");
const { metafile } = await build({
  absWorkingDir: here,
  entryPoints: [path.join(engineDist, "daemon.js")],
  outfile: bundlePath,
  metafile: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["node-pty", "better-sqlite3", "@pydantic/genai-prices"],
  plugins: [ownModuleUrls()],
  // CommonJS dependencies inside an ES module bundle still call require() and read __filename.
  banner: {
    js: [
      'import { createRequire as __puCreateRequire } from "node:module";',
      'import { fileURLToPath as __puFileURLToPath } from "node:url";',
      "const require = __puCreateRequire(import.meta.url);",
      "const __filename = __puFileURLToPath(import.meta.url);",
      'const __dirname = __puFileURLToPath(new URL(".", import.meta.url));',
    ].join("\n"),
  },
  logLevel: "warning",
});

// What bin/pu-engine compares the bundle with at start-up (scripts/bundle-witnesses.mjs). A
// witness that is not there (an installed copy, laid out differently) does not count against it.
writeBundleWitnesses(bundlePath, "pu-engine", path.join(engineDist, "daemon.js"), metafile, here);
