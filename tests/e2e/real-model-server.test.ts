// The test model server through plain HTTP: each API's streaming shape as its CLI reads it,
// the script directives, and the request log.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startModelServer, type ModelServer } from "../model-server/server.js";

interface SseEvent {
  event?: string;
  data: string;
}

let server: ModelServer;
let logDir: string;

beforeAll(async () => {
  logDir = mkdtempSync(path.join(os.tmpdir(), "pu-model-server-"));
  server = await startModelServer({ logFile: path.join(logDir, "requests.jsonl") });
});

afterAll(async () => {
  await server.close();
  rmSync(logDir, { recursive: true, force: true });
});

/** POSTs `body` and returns the SSE events, with when the first one arrived. */
async function stream(route: string, body: unknown): Promise<{ events: SseEvent[]; status: number; contentType: string; firstEventMs: number; totalMs: number }> {
  const started = Date.now();
  const res = await fetch(`${server.url}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const reader = res.body!.getReader();
  let text = "";
  let firstEventMs = -1;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (firstEventMs < 0) firstEventMs = Date.now() - started;
    text += Buffer.from(value).toString("utf8");
  }
  const events = text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? "";
      return event === undefined ? { data } : { event, data };
    });
  return { events, status: res.status, contentType: res.headers.get("content-type") ?? "", firstEventMs, totalMs: Date.now() - started };
}

const json = (e: SseEvent) => JSON.parse(e.data) as Record<string, any>;

const bashTool = { name: "Bash", description: "run", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } };

describe("Anthropic Messages (POST /v1/messages, Claude Code)", () => {
  it("answers HEAD / like the real API's reachability check, and 404s what it does not serve", async () => {
    expect((await fetch(`${server.url}/`, { method: "HEAD" })).status).toBe(200);
    const missing = await fetch(`${server.url}/v1/nothing`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    expect(server.requests.some((r) => r.method === "HEAD" && r.path === "/")).toBe(true);
  });

  it("streams a SAY answer as message_start, text deltas and message_stop", async () => {
    const { events, contentType } = await stream("/v1/messages", {
      model: "claude-x",
      stream: true,
      tools: [bashTool],
      messages: [{ role: "user", content: [{ type: "text", text: "<system-reminder>context</system-reminder>" }, { type: "text", text: "SAY: hello there, friend" }] }],
    });
    expect(contentType).toContain("text/event-stream");
    expect(events[0]?.event).toBe("message_start");
    expect(events.at(-1)?.event).toBe("message_stop");
    const text = events.filter((e) => e.event === "content_block_delta").map((e) => json(e).delta.text).join("");
    expect(text).toBe("hello there, friend");
    expect(json(events.find((e) => e.event === "message_delta")!).delta.stop_reason).toBe("end_turn");
  });

  it("turns RUN into one Bash tool_use, then answers the tool result with the SAY text", async () => {
    const prompt = "RUN: echo hi > out.txt SAY: ran it";
    const first = await stream("/v1/messages", { stream: true, tools: [bashTool], messages: [{ role: "user", content: prompt }] });
    const start = json(first.events.find((e) => e.event === "content_block_start")!);
    expect(start.content_block).toMatchObject({ type: "tool_use", name: "Bash" });
    const input = first.events.filter((e) => e.event === "content_block_delta").map((e) => json(e).delta.partial_json).join("");
    expect(JSON.parse(input)).toEqual({ command: "echo hi > out.txt" });
    expect(json(first.events.find((e) => e.event === "message_delta")!).delta.stop_reason).toBe("tool_use");

    const second = await stream("/v1/messages", {
      stream: true,
      tools: [bashTool],
      messages: [
        { role: "user", content: prompt },
        { role: "assistant", content: [{ type: "tool_use", id: start.content_block.id, name: "Bash", input: JSON.parse(input) }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: start.content_block.id, content: "" }] },
      ],
    });
    expect(second.events.filter((e) => e.event === "content_block_delta").map((e) => json(e).delta.text).join("")).toBe("ran it");
  });

  it("answers a request without tools that asks for JSON (the session title) with a JSON title", async () => {
    const { events } = await stream("/v1/messages", {
      stream: true,
      system: [{ type: "text", text: 'Generate a title. Respond with JSON: {"title": string}' }],
      messages: [{ role: "user", content: "THINK: 10000 SAY: not this" }],
    });
    const text = events.filter((e) => e.event === "content_block_delta").map((e) => json(e).delta.text).join("");
    expect(JSON.parse(text)).toEqual({ title: expect.any(String) });
  });

  it("answers stream: false with one JSON message", async () => {
    const res = await fetch(`${server.url}/v1/messages`, { method: "POST", body: JSON.stringify({ tools: [bashTool], messages: [{ role: "user", content: "SAY: plain" }] }) });
    expect(await res.json()).toMatchObject({ type: "message", content: [{ type: "text", text: "plain" }], stop_reason: "end_turn" });
  });
});

describe("OpenAI Responses (POST /v1/responses, Codex)", () => {
  const execCommand = { type: "function", name: "exec_command", parameters: { type: "object", properties: { cmd: { type: "string" }, workdir: { type: "string" } }, required: ["cmd"] } };
  const shellArray = { type: "function", name: "shell", parameters: { type: "object", properties: { command: { type: "array", items: { type: "string" } } }, required: ["command"] } };
  const userMessage = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] });

  it("streams text as output_text deltas between response.created and response.completed", async () => {
    const { events } = await stream("/v1/responses", { model: "fake-model", stream: true, tools: [execCommand], input: [userMessage("SAY: from codex")] });
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.every((e) => json(e).type === e.event)).toBe(true);
    expect(json(events.at(-2)!).item.content[0]).toMatchObject({ type: "output_text", text: "from codex" });
    expect(json(events.at(-1)!).response).toMatchObject({ id: expect.stringMatching(/^resp_/), status: "completed", usage: { total_tokens: expect.any(Number) } });
  });

  it("calls the shell tool it finds in the request, with arguments shaped by that tool's schema", async () => {
    const withCmd = await stream("/v1/responses", { stream: true, tools: [{ type: "function", name: "view_image", parameters: {} }, execCommand], input: [userMessage("RUN: ls -la")] });
    const item = json(withCmd.events.find((e) => e.event === "response.output_item.done")!).item;
    expect(item).toMatchObject({ type: "function_call", name: "exec_command", call_id: expect.any(String) });
    expect(JSON.parse(item.arguments)).toEqual({ cmd: "ls -la" });

    const withArray = await stream("/v1/responses", { stream: true, tools: [shellArray], input: [userMessage("RUN: ls -la")] });
    const arrayItem = json(withArray.events.find((e) => e.event === "response.output_item.done")!).item;
    expect(JSON.parse(arrayItem.arguments)).toEqual({ command: ["bash", "-lc", "ls -la"] });
  });

  it("after the tool output answers with the SAY text, even with Codex's own context messages in between", async () => {
    const { events } = await stream("/v1/responses", {
      stream: true,
      tools: [execCommand],
      input: [
        userMessage("RUN: true SAY: finished"),
        userMessage("<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>"),
        { type: "function_call", name: "exec_command", arguments: '{"cmd":"true"}', call_id: "call_1" },
        { type: "function_call_output", call_id: "call_1", output: "" },
      ],
    });
    expect(json(events.find((e) => e.event === "response.output_item.done")!).item.content[0].text).toBe("finished");
  });

  it("answers Codex's title thread (no tools) at once, ignoring the THINK it quotes", async () => {
    const { events, totalMs } = await stream("/v1/responses", { stream: true, tools: [], instructions: "Write a short title.", input: [userMessage("User prompt:\nTHINK: 10000 SAY: x")] });
    expect(totalMs).toBeLessThan(10_000);
    expect(json(events.find((e) => e.event === "response.output_item.done")!).item.content[0].text).toBe("Scripted test task");
  });
});

describe("OpenAI Chat Completions (POST /v1/chat/completions, OpenCode)", () => {
  const bash = {
    type: "function",
    function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" }, description: { type: "string" }, timeout: { type: "number" } }, required: ["command", "description"] } },
  };

  it("streams a tool call as tool_calls deltas, fills the tool's other required fields, and ends with [DONE]", async () => {
    const { events } = await stream("/v1/chat/completions", { model: "fake-model", stream: true, tools: [bash], messages: [{ role: "system", content: "be useful" }, { role: "user", content: "RUN: touch a SAY: ok" }] });
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)?.data).toBe("[DONE]");
    const chunks = events.slice(0, -1).map(json);
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    const calls = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, id: expect.any(String), type: "function", function: { name: "bash" } });
    const args = JSON.parse(calls.map((c: any) => c.function.arguments).join(""));
    expect(args).toEqual({ command: "touch a", description: expect.any(String) });
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe("tool_calls");
  });

  it("streams the SAY text after the tool message", async () => {
    const { events } = await stream("/v1/chat/completions", {
      stream: true,
      tools: [bash],
      messages: [
        { role: "user", content: [{ type: "text", text: "RUN: touch a SAY: all good" }] },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "" },
      ],
    });
    const chunks = events.slice(0, -1).map(json);
    expect(chunks.map((c) => c.choices[0].delta.content ?? "").join("")).toBe("all good");
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe("stop");
  });
});

describe("script directives and the request log", () => {
  it("THINK holds the first event back, PACE spaces the chunks", async () => {
    const thought = await stream("/v1/chat/completions", { stream: true, tools: [{ type: "function", function: { name: "bash" } }], messages: [{ role: "user", content: "THINK: 700 SAY: hi" }] });
    expect(thought.firstEventMs).toBeGreaterThanOrEqual(650);
    // Five words, so four pauses of PACE between them at the least.
    const paced = await stream("/v1/chat/completions", { stream: true, tools: [{ type: "function", function: { name: "bash" } }], messages: [{ role: "user", content: "PACE: 200 SAY: one two three four five" }] });
    expect(paced.totalMs).toBeGreaterThanOrEqual(4 * 190);
  });

  it("answers a newer prompt without directives plainly instead of replaying the old script", async () => {
    const { events } = await stream("/v1/chat/completions", {
      stream: true,
      tools: [{ type: "function", function: { name: "bash" } }],
      messages: [
        { role: "user", content: "RUN: rm -rf nothing" },
        { role: "assistant", content: "done" },
        { role: "user", content: "what now?" },
      ],
    });
    expect(events.slice(0, -1).map(json).map((c) => c.choices[0].delta.content ?? "").join("")).toBe("OK");
  });

  it("logs each request with its API, tools and answer, in memory and as JSON lines", async () => {
    const before = server.requests.length;
    await stream("/v1/messages", { model: "m1", stream: true, tools: [bashTool], messages: [{ role: "user", content: "RUN: date" }] });
    const entry = await server.waitForRequest((r) => r.seq > before && r.finishedAt !== undefined);
    expect(entry).toMatchObject({ method: "POST", path: "/v1/messages", api: "anthropic", model: "m1", stream: true, tools: ["Bash"], reply: "tool_call", toolName: "Bash", command: "date", status: 200 });
    const lines = readFileSync(path.join(logDir, "requests.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.find((l) => l.seq === entry.seq)).toMatchObject({ command: "date" });
  });
});
