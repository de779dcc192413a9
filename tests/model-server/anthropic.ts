// Anthropic Messages API (`POST /v1/messages`), as Claude Code uses it.
import type { ServerResponse } from "node:http";
import { chunkText, type ConversationView, type JsonSchema, type Reply, type ScriptedUsage } from "./script.js";
import { newId, sendJson, SseStream } from "./sse.js";

interface Block {
  type?: string;
  text?: string;
  content?: unknown;
}
interface Message {
  role?: string;
  content?: string | Block[];
}
export interface MessagesRequest {
  model?: string;
  stream?: boolean;
  system?: string | Block[];
  messages?: Message[];
  tools?: { name?: string; type?: string; input_schema?: JsonSchema }[];
}

function blocks(content: Message["content"]): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
}

export function viewMessages(body: MessagesRequest): ConversationView {
  const view: ConversationView = { userTurns: [], tools: [], systemText: blocks(body.system).map((b) => b.text ?? "").join("\n") };
  for (const message of body.messages ?? []) {
    if (message.role !== "user") continue;
    const parts = blocks(message.content);
    const toolResults = parts.filter((b) => b.type === "tool_result").length;
    const last = view.userTurns.at(-1);
    const text = parts.map((b) => (b.type === "text" ? (b.text ?? "") : "")).filter((t) => t !== "").join("\n");
    if (toolResults > 0) {
      if (last) last.toolResultsAfter += toolResults;
      // Text beside the results is a new prompt (after an interrupted tool, Claude sends both in one message).
      if (text === "") continue;
    }
    view.userTurns.push({ text, toolResultsAfter: 0 });
  }
  for (const tool of body.tools ?? []) {
    if (!tool.name) continue;
    // Client tools carry an input schema; server tools (web search…) carry a versioned type instead.
    view.tools.push(tool.input_schema ? { name: tool.name, type: "function", parameters: tool.input_schema } : { name: tool.name, type: tool.type ?? "server" });
  }
  return view;
}

/** The Messages API's usage: `input_tokens` is the uncached part; output grows while streaming. */
function usage(scripted: ScriptedUsage, outputTokens: number) {
  return { input_tokens: scripted.input, output_tokens: outputTokens, cache_creation_input_tokens: scripted.cacheWrite, cache_read_input_tokens: scripted.cacheRead };
}

export async function answerMessages(res: ServerResponse, body: MessagesRequest, reply: Reply): Promise<void> {
  const model = body.model ?? "fake-model";
  const id = newId("msg_");
  const toolUseId = newId("toolu_");
  const stopReason = reply.kind === "tool_call" ? "tool_use" : "end_turn";
  const text = reply.kind === "tool_call" ? "" : reply.text;

  if (body.stream !== true) {
    const content =
      reply.kind === "tool_call"
        ? [...(reply.note ? [{ type: "text", text: reply.note }] : []), { type: "tool_use", id: toolUseId, name: reply.tool.name, input: reply.arguments }]
        : [{ type: "text", text }];
    if (reply.kind !== "title") await pauseFor(reply.thinkMs);
    sendJson(res, 200, { id, type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage: usage(reply.usage, reply.usage.output) });
    return;
  }

  const sse = new SseStream(res);
  const paceMs = reply.kind === "title" ? 0 : reply.paceMs;
  if (reply.kind !== "title") await sse.pause(reply.thinkMs);
  sse.send({ type: "message_start", message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: usage(reply.usage, 1) } }, "message_start");
  let index = 0;
  if (reply.kind === "tool_call" && reply.note) {
    sse.send({ type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start");
    sse.send({ type: "content_block_delta", index, delta: { type: "text_delta", text: reply.note } }, "content_block_delta");
    sse.send({ type: "content_block_stop", index }, "content_block_stop");
    index += 1;
  }
  if (reply.kind === "tool_call") {
    sse.send({ type: "content_block_start", index, content_block: { type: "tool_use", id: toolUseId, name: reply.tool.name, input: {} } }, "content_block_start");
    const json = JSON.stringify(reply.arguments);
    // Partial JSON arrives in pieces, as from the real API.
    for (let i = 0; i < json.length; i += 16) {
      sse.send({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: json.slice(i, i + 16) } }, "content_block_delta");
      await sse.pause(paceMs);
    }
  } else {
    sse.send({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start");
    for (const chunk of chunkText(text)) {
      sse.send({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: chunk } }, "content_block_delta");
      await sse.pause(paceMs);
    }
  }
  sse.send({ type: "content_block_stop", index }, "content_block_stop");
  sse.send({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: reply.usage.output } }, "message_delta");
  sse.send({ type: "message_stop" }, "message_stop");
  sse.end();
}

function pauseFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
