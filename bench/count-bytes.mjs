// A pipe consumer for the tmux reference: counts stdin bytes and, at EOF, writes
// { bytes, firstByteAt, lastByteAt } (epoch ms, sub-ms precision) to the file in argv[2].
import { writeFileSync, renameSync } from "node:fs";

const out = process.argv[2];
const clock = () => performance.timeOrigin + performance.now();
let bytes = 0;
let firstByteAt = null;
let lastByteAt = null;
process.stdin.on("data", (chunk) => {
  bytes += chunk.length;
  lastByteAt = clock();
  firstByteAt ??= lastByteAt;
});
process.stdin.on("end", () => {
  // Written whole then renamed, so the reader never sees half a file.
  writeFileSync(`${out}.tmp`, JSON.stringify({ bytes, firstByteAt, lastByteAt }));
  renameSync(`${out}.tmp`, out);
});
