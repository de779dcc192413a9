/**
 * How the daemon's Node process is started (by `pu` on this machine and on a host alike).
 *
 * `--min-semi-space-size=16` (MiB): an agent flooding its terminal makes the daemon allocate a
 * Buffer per PTY read and a frame per viewer batch. With V8's default young generation (1 MiB
 * to start, grown only under pressure) enough of that survived two scavenges to fill the old
 * generation near its limit, and 200 MiB of `cat` cost 17–27 full mark-compacts in some runs
 * and 1–2 in others; the full ones ran on both cores and paused the read loop. Starting the
 * young generation at 16 MiB left 1 full collection per run in every run measured, and the
 * throughput to a viewer rose (bench/RESULTS.md). It costs ≈ 14 MiB of RSS at idle.
 *
 * `--initial-old-space-size=128` (MiB): the same storm came back once the daemon had lived a
 * while. After a few floods its old generation held ≈ 28 MiB against a limit V8 set at ≈ 51 MiB,
 * and V8 starts marking when what is left under the limit is less than the young generation can
 * promote at once (16 MiB semi-spaces); the read buffers and frames of a flood count toward the
 * limit too, so every flood from then on ran 13–18 full collections (`--trace-gc`: "Start
 * (allocation limit)") and read 10–20 % slower. A floor of 128 MiB under the limit leaves no full
 * collection in a flood however long the daemon has run. It moves when a full collection happens,
 * not what is kept: the daemon's peak RSS over a flood stayed within the same range
 * (bench/RESULTS.md).
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ["--min-semi-space-size=16", "--initial-old-space-size=128"];
