// One writer process for the manifest benchmark: waits for "go" on stdin, then
// increments `benchCounter` in the project's manifest `count` times through
// ManifestStore.update (cross-process lock + atomic write), then prints "done".
import { loadManifestStore } from "./lib.mjs";

const [root, countArg] = process.argv.slice(2);
const count = Number(countArg);
const { ManifestStore } = await loadManifestStore();
const store = new ManifestStore();
const increment = (manifest) => {
  manifest.benchCounter = (typeof manifest.benchCounter === "number" ? manifest.benchCounter : 0) + 1;
};

process.stdout.write("ready\n");
process.stdin.once("data", async () => {
  for (let i = 0; i < count; i++) await store.update(root, increment);
  process.stdout.write("done\n");
  process.exit(0);
});
