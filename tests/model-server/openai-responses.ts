// OpenAI Responses API (`POST /v1/responses`), as Codex uses it: always streamed, and Codex
// takes each finished item from `response.output_item.done` and ends the turn on
// `response.completed`.
import type { ServerResponse } from "node:http";
import { chunkText, type ConversationView, type JsonSchema, type Reply, type ScriptedUsage } from "./script.js";
import { newId, sendJson, SseStream } from "./sse.js";

interface InputItem {
  type?: string;
  role?: string;
  content?: string | { type?: string; text?: string }[];
}
export interface ResponsesRequest {
  model?: string;
  stream?: boolean;
  instructions?: string;
  input?: string | InputItem[];
  tools?: { type?: string; name?: string; parameters?: JsonSchema }[];
}

function itemText(content: InputItem["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("\n");
}

export function viewResponses(body: ResponsesRequest): ConversationView {
  const view: ConversationView = { userTurns: [], tools: [], systemText: body.instructions ?? "" };
  const input = typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : (body.input ?? []);
  for (const item of input) {
    const type = item.type ?? "message";
    if (type === "message" && item.role === "user") view.userTurns.push({ text: itemText(item.content), toolResultsAfter: 0 });
    else if (type === "message" && (item.role === "developer" || item.role === "system")) view.systemText += `\n${itemText(item.content)}`;
    else if (type.endsWith("_call_output")) {
      const last = view.userTurns.at(-1);
      if (last) last.toolResultsAfter += 1;
    }
  }
  for (const tool of body.tools ?? []) {
    const type = tool.type ?? "function";
    const name = tool.name ?? type;
    view.tools.push(tool.parameters ? { name, type, parameters: tool.parameters } : { name, type });
  }
  return view;
}

/** The Responses API's usage: `input_tokens` includes the cached ones, `output_tokens` the reasoning. */
function usageOf(u: ScriptedUsage) {
  const input = u.input + u.cacheRead + u.cacheWrite;
  const output = u.output + u.reasoning;
  return { input_tokens: input, input_tokens_details: { cached_tokens: u.cacheRead }, output_tokens: output, output_tokens_details: { reasoning_tokens: u.reasoning }, total_tokens: input + output };
}

function finishedItem(reply: Reply, itemId: string, callId: string): Record<string, unknown> {
  if (reply.kind === "tool_call" && reply.tool.type === "local_shell") {
    return { type: "local_shell_call", id: itemId, call_id: callId, status: "completed", action: { type: "exec", command: reply.arguments.command, env: {} } };
  }
  if (reply.kind === "tool_call") {
    return { type: "function_call", id: itemId, call_id: callId, name: reply.tool.name, arguments: JSON.stringify(reply.arguments), status: "completed" };
  }
  return { type: "message", id: itemId, role: "assistant", status: "completed", content: [{ type: "output_text", text: reply.text, annotations: [] }] };
}

export async function answerResponses(res: ServerResponse, body: ResponsesRequest, reply: Reply): Promise<void> {
  const model = body.model ?? "fake-model";
  const responseId = newId("resp_");
  const itemId = newId(reply.kind === "tool_call" ? "fc_" : "msg_");
  const callId = newId("call_");
  const item = finishedItem(reply, itemId, callId);
  const response = (status: string, output: unknown[]) => ({ id: responseId, object: "response", created_at: Math.floor(Date.now() / 1000), status, model, output });
  const thinkMs = reply.kind === "title" ? 0 : reply.thinkMs;
  const paceMs = reply.kind === "title" ? 0 : reply.paceMs;

  if (body.stream !== true) {
    await new Promise((resolve) => setTimeout(resolve, thinkMs));
    sendJson(res, 200, { ...response("completed", [item]), usage: usageOf(reply.usage) });
    return;
  }

  const sse = new SseStream(res);
  let sequence = 0;
  const send = (type: string, fields: Record<string, unknown>) => sse.send({ type, sequence_number: sequence++, ...fields }, type);
  send("response.created", { response: response("in_progress", []) });
  // The thinking delay comes after `response.created`, the way a real model opens the stream and then reasons.
  await sse.pause(thinkMs);
  if (reply.kind === "tool_call" && item.type === "function_call") {
    const args = String(item.arguments);
    send("response.output_item.added", { output_index: 0, item: { ...item, arguments: "", status: "in_progress" } });
    for (let i = 0; i < args.length; i += 16) {
      send("response.function_call_arguments.delta", { item_id: itemId, output_index: 0, delta: args.slice(i, i + 16) });
      await sse.pause(paceMs);
    }
    send("response.function_call_arguments.done", { item_id: itemId, output_index: 0, arguments: args });
  } else if (reply.kind === "tool_call") {
    send("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress" } });
  } else {
    send("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
    const part = { type: "output_text", text: "", annotations: [] };
    send("response.content_part.added", { item_id: itemId, output_index: 0, content_index: 0, part });
    for (const chunk of chunkText(reply.text)) {
      send("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta: chunk });
      await sse.pause(paceMs);
    }
    send("response.output_text.done", { item_id: itemId, output_index: 0, content_index: 0, text: reply.text });
    send("response.content_part.done", { item_id: itemId, output_index: 0, content_index: 0, part: { ...part, text: reply.text } });
  }
  send("response.output_item.done", { output_index: 0, item });
  send("response.completed", { response: { ...response("completed", [item]), usage: usageOf(reply.usage) } });
  sse.end();
}
