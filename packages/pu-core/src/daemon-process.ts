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
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ["--min-semi-space-size=16"];
