// OpenAI Chat Completions (`POST /v1/chat/completions`), as OpenCode's
// `@ai-sdk/openai-compatible` provider uses it: streamed chunks, tool calls as
// `delta.tool_calls` with the arguments in pieces, then `data: [DONE]`.
import type { ServerResponse } from "node:http";
import { chunkText, type ConversationView, type JsonSchema, type Reply, type ScriptedUsage } from "./script.js";
import { newId, sendJson, SseStream } from "./sse.js";

interface ChatMessage {
  role?: string;
  content?: string | null | { type?: string; text?: string }[];
}
export interface ChatRequest {
  model?: string;
  stream?: boolean;
  messages?: ChatMessage[];
  tools?: { type?: string; function?: { name?: string; parameters?: JsonSchema } }[];
}

function messageText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("\n");
}

export function viewChat(body: ChatRequest): ConversationView {
  const view: ConversationView = { userTurns: [], tools: [], systemText: "" };
  for (const message of body.messages ?? []) {
    if (message.role === "user") view.userTurns.push({ text: messageText(message.content), toolResultsAfter: 0 });
    else if (message.role === "system" || message.role === "developer") view.systemText += `\n${messageText(message.content)}`;
    else if (message.role === "tool") {
      const last = view.userTurns.at(-1);
      if (last) last.toolResultsAfter += 1;
    }
  }
  for (const tool of body.tools ?? []) {
    const name = tool.function?.name;
    if (!name) continue;
    view.tools.push(tool.function?.parameters ? { name, type: "function", parameters: tool.function.parameters } : { name, type: "function" });
  }
  return view;
}

/** Chat Completions usage: `prompt_tokens` includes the cached ones, `completion_tokens` the reasoning. */
function usageOf(u: ScriptedUsage) {
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  const completion = u.output + u.reasoning;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: u.cacheRead },
    completion_tokens_details: { reasoning_tokens: u.reasoning },
  };
}

export async function answerChat(res: ServerResponse, body: ChatRequest, reply: Reply): Promise<void> {
  const model = body.model ?? "fake-model";
  const id = newId("chatcmpl-");
  const created = Math.floor(Date.now() / 1000);
  const callId = newId("call_");
  const args = reply.kind === "tool_call" ? JSON.stringify(reply.arguments) : "";
  const finishReason = reply.kind === "tool_call" ? "tool_calls" : "stop";
  const thinkMs = reply.kind === "title" ? 0 : reply.thinkMs;
  const paceMs = reply.kind === "title" ? 0 : reply.paceMs;

  if (body.stream !== true) {
    await new Promise((resolve) => setTimeout(resolve, thinkMs));
    const message =
      reply.kind === "tool_call"
        ? { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: reply.tool.name, arguments: args } }] }
        : { role: "assistant", content: reply.text };
    sendJson(res, 200, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finishReason }], usage: usageOf(reply.usage) });
    return;
  }

  const sse = new SseStream(res);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
    sse.send({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
  await sse.pause(thinkMs);
  if (reply.kind === "tool_call") {
    chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: callId, type: "function", function: { name: reply.tool.name, arguments: "" } }] });
    for (let i = 0; i < args.length; i += 16) {
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 16) } }] });
      await sse.pause(paceMs);
    }
  } else {
    chunk({ role: "assistant", content: "" });
    for (const piece of chunkText(reply.text)) {
      chunk({ content: piece });
      await sse.pause(paceMs);
    }
  }
  chunk({}, finishReason, { usage: usageOf(reply.usage) });
  sse.send("[DONE]");
  sse.end();
}
