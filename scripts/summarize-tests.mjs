// Sums the vitest JSON reports of every package into the one closing line CI reads.
// Arguments name=exitCode (e.g. lint=0 typecheck=2) add the other checks of the run.
import { existsSync, readFileSync } from "node:fs";

const reports = ["packages/pu-core", "packages/pu-ipc", "packages/pu-engine", "packages/pu-cli", "tests"]
  .map((dir) => `${dir}/.vitest-report.json`);
let passed = 0;
let failed = 0;
let skipped = 0;
let missing = 0;
for (const path of reports) {
  if (!existsSync(path)) {
    missing += 1;
    console.error(`summarize-tests: no report at ${path} (its test run did not finish)`);
    continue;
  }
  const report = JSON.parse(readFileSync(path, "utf8"));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + (report.numTodoTests ?? 0);
  // A suite that failed to load has no test results but must still count as a failure.
  failed += report.testResults.filter((r) => r.status === "failed" && r.assertionResults.length === 0).length;
}
failed += missing;
// Lint and typecheck are checks too: one that failed counts once, so the closing line never
// reads "0 failed" for a run that failed.
for (const arg of process.argv.slice(2)) {
  const [name, code] = arg.split("=");
  if (code !== "0") {
    failed += 1;
    console.error(`summarize-tests: ${name} failed (exit ${code})`);
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
