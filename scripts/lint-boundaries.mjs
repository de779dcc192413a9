// Enforces the package graph in DESIGN.md: pu-core imports nothing of pu,
// pu-ipc only pu-core, pu-cli never pu-engine's code.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const allowed = {
  "pu-core": [],
  "pu-ipc": ["@pu/core"],
  "pu-engine": ["@pu/core", "@pu/ipc"],
  "pu-cli": ["@pu/core", "@pu/ipc"],
};
const problems = [];
function walk(dir, pkg) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, pkg);
    else if (name.endsWith(".ts")) {
      const text = readFileSync(path, "utf8");
      for (const m of text.matchAll(/(?:from\s+|import\(\s*)["'](@pu\/[a-z-]+)/g)) {
        if (!allowed[pkg].includes(m[1])) problems.push(`${path}: ${pkg} may not import ${m[1]}`);
      }
    }
  }
}
for (const pkg of Object.keys(allowed)) walk(join("packages", pkg, "src"), pkg);
for (const p of problems) console.error(p);
if (problems.length) process.exit(1);
console.log("package boundaries ok");
