import { describe, expect, it } from "vitest";
import { ClaudeRecordReader, CodexRecordReader, addToTally, budgetTokens, claudeProjectFolder, openCodeMessageCall, type UsageTally } from "../src/usage.js";

// Lines shaped as claude 2.1, codex-cli 0.169 and opencode 1.18 write them (fields pu does not read left out).
const claudeLine = (id: string, blocks: string, usage: Record<string, unknown>, timestamp = "2026-11-26T01:49:44.000Z") =>
  JSON.stringify({ type: "assistant", timestamp, message: { id, model: "claude-sonnet-4-5", content: [{ type: blocks }], usage } });

function tallyOf(lines: string[], reader: { line(text: string): { call: Parameters<typeof addToTally>[1]; calls: number }[] }): UsageTally {
  const tally: UsageTally = {};
  for (const line of lines) for (const { call, calls } of reader.line(line)) addToTally(tally, call, calls);
  return tally;
}

describe("Claude Code session files", () => {
  const usage = { input_tokens: 100, cache_creation_input_tokens: 40, cache_read_input_tokens: 300, output_tokens: 20 };

  it("counts an answer written as two lines (text, then tool_use) once", () => {
    const tally = tallyOf([claudeLine("msg_1", "text", usage), claudeLine("msg_1", "tool_use", usage), claudeLine("msg_2", "text", usage)], new ClaudeRecordReader());
    expect(tally["2026-11-26|claude-sonnet-4-5"]).toEqual({ input: 200, cacheRead: 600, cacheWrite: 80, output: 40, reasoning: 0, calls: 2 });
  });

  it("adds only the growth when a later line of the same answer has larger figures", () => {
    const tally = tallyOf([claudeLine("msg_1", "text", { ...usage, output_tokens: 1 }), claudeLine("msg_1", "tool_use", usage)], new ClaudeRecordReader());
    expect(tally["2026-11-26|claude-sonnet-4-5"]).toMatchObject({ output: 20, input: 100, calls: 1 });
  });

  it("skips user lines, torn lines, foreign JSON and synthetic messages", () => {
    const reader = new ClaudeRecordReader();
    const synthetic = JSON.stringify({ type: "assistant", message: { id: "x", model: "<synthetic>", usage } });
    const tally = tallyOf(['{"type":"user","message":{"role":"user"}}', '{"type":"assist', "[1,2]", synthetic, ""], reader);
    expect(tally).toEqual({});
  });

  it("names the project folder the way Claude Code does", () => {
    expect(claudeProjectFolder("/tmp/pu-x/project/.pu/worktrees/wt-7mw367va")).toBe("-tmp-pu-x-project--pu-worktrees-wt-7mw367va");
  });
});

describe("Codex rollout files", () => {
  const total = (input: number, cached: number, output: number, reasoning: number) =>
    JSON.stringify({
      timestamp: "2026-11-26T01:49:51.756Z",
      type: "event_msg",
      payload: { type: "token_count", info: { total_token_usage: { input_tokens: input, cached_input_tokens: cached, cache_write_input_tokens: 0, output_tokens: output, reasoning_output_tokens: reasoning }, last_token_usage: {} } },
    });
  const context = (model: string) => JSON.stringify({ type: "turn_context", payload: { model, cwd: "/w" } });

  it("counts the growth of the running total, input without the cached part, per model", () => {
    const tally = tallyOf([context("gpt-5-codex"), total(440, 300, 23, 3), total(880, 600, 46, 6), total(880, 600, 46, 6), context("gpt-5.1"), total(1880, 600, 246, 6)], new CodexRecordReader());
    expect(tally["2026-11-26|gpt-5-codex"]).toEqual({ input: 280, cacheRead: 600, cacheWrite: 0, output: 46, reasoning: 6, calls: 2 });
    expect(tally["2026-11-26|gpt-5.1"]).toEqual({ input: 1000, cacheRead: 0, cacheWrite: 0, output: 200, reasoning: 0, calls: 1 });
  });

  it("ignores token_count events without a total (rate-limit only)", () => {
    const bare = JSON.stringify({ type: "event_msg", payload: { type: "token_count", info: null, rate_limits: {} } });
    expect(tallyOf([context("m"), bare], new CodexRecordReader())).toEqual({});
  });
});

describe("OpenCode messages", () => {
  it("reads an assistant message, reasoning counted in output", () => {
    const data = JSON.stringify({ role: "assistant", modelID: "fake-model", tokens: { total: 463, input: 140, output: 20, reasoning: 3, cache: { write: 0, read: 300 } } });
    const call = openCodeMessageCall(data, Date.parse("2026-11-26T01:50:04Z"));
    expect(call).toEqual({ model: "fake-model", day: "2026-11-26", tokens: { input: 140, cacheRead: 300, cacheWrite: 0, output: 23, reasoning: 3 } });
    expect(budgetTokens(call!.tokens)).toBe(463);
  });

  it("a message still streaming (no figures, not completed) is not a call yet", () => {
    const streaming = JSON.stringify({ role: "assistant", modelID: "m", tokens: { input: 0, output: 0, reasoning: 0, cache: { write: 0, read: 0 } }, time: { created: 1 } });
    expect(openCodeMessageCall(streaming, 0)).toBeUndefined();
    const done = JSON.stringify({ role: "assistant", modelID: "m", tokens: { input: 0, output: 0, reasoning: 0, cache: { write: 0, read: 0 } }, time: { created: 1, completed: 2 } });
    expect(openCodeMessageCall(done, 0)?.tokens.input).toBe(0);
  });

  it("skips user messages and bad JSON", () => {
    expect(openCodeMessageCall(JSON.stringify({ role: "user" }), 0)).toBeUndefined();
    expect(openCodeMessageCall("{not json", 0)).toBeUndefined();
  });
});
