// Per-package lint: every relative import in src/ must carry a .js extension
// (NodeNext ESM resolution fails at run time otherwise, after tsc happily compiled it).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const problems = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith(".ts")) check(path);
  }
}
function check(path) {
  const lines = readFileSync(path, "utf8").split("\n");
  lines.forEach((line, i) => {
    const m = /\bfrom\s+["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/.exec(line);
    const spec = m?.[1] ?? m?.[2];
    if (spec && !spec.endsWith(".js") && !spec.endsWith(".json")) {
      problems.push(`${path}:${i + 1}: relative import "${spec}" needs a .js extension`);
    }
  });
}
walk("src");
for (const p of problems) console.error(p);
process.exit(problems.length ? 1 : 0);
