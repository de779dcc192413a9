// The import rules of .dependency-cruiser.cjs over every package's src/, run in the
// current directory (so the lint-rule test can run it on a copy of the tree). Any
// violation fails.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// The workspace's own copy, so the check also runs in a copy of the tree.
const depcruise = fileURLToPath(new URL("../node_modules/dependency-cruiser/bin/dependency-cruise.mjs", import.meta.url));
const sources = readdirSync("packages")
  .map((pkg) => join("packages", pkg, "src"))
  .filter((dir) => existsSync(dir));

const args = [depcruise, ...sources, "--config", ".dependency-cruiser.cjs", "--output-type", "err"];
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
process.exit(result.status ?? 1);
