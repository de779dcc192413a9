// The staleness witnesses of a bundle: files whose being newer than the bundle means it was made
// from older code (`tsc` run alone after an edit, or a workspace package rebuilt without the one
// bundling it). bin/pu and bin/pu-engine read them at start-up, one stat each, and run the
// module-by-module tsc output instead of a stale bundle. tsc rewrites every file it emits, so one
// dist file per workspace package is enough. Shared by pu-cli's and pu-engine's build.mjs; the
// start-up side stays in each bin, which loads no extra module for it.
import { writeFileSync } from "node:fs";
import path from "node:path";

const WORKSPACE_DIST_FILE = /[/\\]packages[/\\](pu-[^/\\]+)[/\\]dist[/\\].+\.js$/;

/**
 * Writes `${bundlePath}.inputs`: `ownEntry` (the bundling package's entry in dist/, named by
 * `ownPackage`) and the first dist file of each other workspace package in esbuild's metafile,
 * one per line, relative to the bundle's folder with forward slashes. `workingDir` is the build's
 * `absWorkingDir`, which the metafile's paths are relative to.
 */
export function writeBundleWitnesses(bundlePath, ownPackage, ownEntry, metafile, workingDir) {
  const witnesses = new Map([[ownPackage, ownEntry]]);
  for (const input of Object.keys(metafile.inputs)) {
    const file = path.resolve(workingDir, input);
    const m = WORKSPACE_DIST_FILE.exec(file);
    if (m && !witnesses.has(m[1])) witnesses.set(m[1], file);
  }
  const lines = [...witnesses.values()].map((file) => path.relative(path.dirname(bundlePath), file).split(path.sep).join("/"));
  writeFileSync(`${bundlePath}.inputs`, lines.join("\n") + "\n");
}
