// Started by bench/screen.mjs as `node --expose-gc bench/screen-memory.mjs N`: the memory
// N screen models take in isolation (each 120×40, fed a shell prompt and parsed), measured
// after full garbage collections as heap + external growth and RSS growth. Prints JSON.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ENGINE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../packages/pu-engine/dist");
const { ScreenModel } = await import(pathToFileURL(path.join(ENGINE_DIST, "session/screen-model.js")).href);
const { OutputRing } = await import(pathToFileURL(path.join(ENGINE_DIST, "session/output-ring.js")).href);

const count = Number(process.argv[2] ?? 100);
const settle = () => {
  for (let i = 0; i < 3; i++) globalThis.gc();
};
const used = () => {
  const m = process.memoryUsage();
  return { heap: m.heapUsed + m.external, rss: m.rss };
};

// One model first, so xterm's code is loaded and compiled outside the measured growth.
const warm = new ScreenModel(new OutputRing(4096), 120, 40);
await warm.settle();
settle();
const before = used();
const models = [];
for (let i = 0; i < count; i++) {
  // A small ring: the agent's own 1 MiB ring is not the screen model's cost.
  const ring = new OutputRing(4096);
  const model = new ScreenModel(ring, 120, 40);
  ring.append(Buffer.from("\x1b[?2004h$ "));
  model.noteOutput();
  models.push(model);
}
await Promise.all(models.map((m) => m.settle()));
settle();
const after = used();
process.stdout.write(JSON.stringify({ count, heapBytesPerModel: (after.heap - before.heap) / count, rssBytesPerModel: (after.rss - before.rss) / count }) + "\n");
await Promise.all([warm, ...models].map((m) => m.close()));
