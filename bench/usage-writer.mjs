#!/usr/bin/env node
// Stands in for Claude Code in bench/usage.mjs: writes the session file pu reads for the
// `--session-id` it was given (as Claude does, under $HOME/.claude/projects/<cwd folder>/),
// every INTERVAL ms while the file GROW_FLAG exists a line — by turns a tool result of 4 KiB
// (no usage: pu must pass over it cheaply) and an answer with its usage — and otherwise sleeps.
import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";

const [growFlag, intervalMs] = [process.env.PU_BENCH_GROW_FLAG, Number(process.env.PU_BENCH_INTERVAL_MS ?? 50)];
const sessionId = process.argv[process.argv.indexOf("--session-id") + 1];
const folder = process.cwd().replace(/[^A-Za-z0-9]/g, "-");
const file = path.join(process.env.HOME, ".claude", "projects", folder, `${sessionId}.jsonl`);
mkdirSync(path.dirname(file), { recursive: true });
let n = 0;
setInterval(() => {
  if (!growFlag || !existsSync(growFlag)) return;
  n += 1;
  if (n % 2 === 1) {
    appendFileSync(file, `${JSON.stringify({ type: "user", timestamp: new Date().toISOString(), message: { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${n}`, content: "y".repeat(4096) }] } })}\n`);
    return;
  }
  const usage = { input_tokens: 1200, cache_read_input_tokens: 40_000, cache_creation_input_tokens: 800, output_tokens: 350 };
  appendFileSync(file, `${JSON.stringify({ type: "assistant", timestamp: new Date().toISOString(), message: { id: `msg_${sessionId}_${n}`, model: "claude-sonnet-4-5", content: [{ type: "text", text: "x".repeat(400) }], usage } })}\n`);
}, intervalMs);
