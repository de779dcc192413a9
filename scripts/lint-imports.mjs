// The import rules of .dependency-cruiser.cjs over every package's src/, run in
// the current directory. Violations listed in the baseline pass (and are counted
// in the output, so the count can be seen shrinking); any other one fails.
//   node scripts/lint-imports.mjs                    check
//   node scripts/lint-imports.mjs --update-baseline  record today's violations as known
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// The workspace's own copy, so the check also runs in a copy of the tree (scripts/test).
const depcruise = fileURLToPath(new URL("../node_modules/dependency-cruiser/bin/dependency-cruise.mjs", import.meta.url));
const baseline = ".dependency-cruiser-known-violations.json";
const sources = readdirSync("packages")
  .map((pkg) => join("packages", pkg, "src"))
  .filter((dir) => existsSync(dir));

const args = [depcruise, ...sources, "--config", ".dependency-cruiser.cjs"];
if (process.argv.includes("--update-baseline")) args.push("--output-type", "baseline", "--output-to", baseline);
else args.push("--output-type", "err", "--ignore-known", baseline);

const result = spawnSync(process.execPath, args, { stdio: "inherit" });
process.exit(result.status ?? 1);
