// Sums the vitest JSON reports of every package into the one closing line CI reads.
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
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
