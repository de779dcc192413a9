import { defineConfig } from "vitest/config";

// PTYs and child daemons do not survive worker threads well; forks isolate them.
export default defineConfig({
  test: {
    include: ["e2e/**/*.test.ts", "lint/**/*.test.ts", "install/**/*.test.ts"],
    pool: "forks",
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
