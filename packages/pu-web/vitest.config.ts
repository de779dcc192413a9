import { defineConfig } from "vitest/config";

// PTYs and child daemons do not survive worker threads well; forks isolate them.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
