// Bundles the page `pu web` serves: src/page/main.ts (with xterm.js, diff2html and dagre) into
// dist/page/app.js, its styles into dist/page/app.css, and copies index.html. The server reads
// these three files once at start; nothing is fetched from anywhere else.
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, "dist", "page");
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { app: path.join(here, "src", "page", "main.ts"), "app-styles": path.join(here, "src", "page", "app.css") },
  outdir: out,
  bundle: true,
  format: "iife",
  platform: "browser",
  target: ["chrome110", "firefox110", "safari16"],
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
// esbuild names the CSS of the "app-styles" entry app-styles.css; the server serves app.css.
copyFileSync(path.join(out, "app-styles.css"), path.join(out, "app.css"));
copyFileSync(path.join(here, "src", "page", "index.html"), path.join(out, "index.html"));
