/**
 * Tokens the agent CLIs record for each model call, read from their own files and normalized
 * to one shape. Every CLI spells usage its own way (docs/usage.md):
 *
 * - Claude Code writes one JSONL line per content block of an answer, each repeating the
 *   answer's `message.id` and `usage`: a call is counted once per id (the last line wins, so a
 *   line written before the answer finished cannot hold a figure back).
 * - Codex writes running totals (`token_count` events); a call is the difference from the last
 *   total, and its `input_tokens` include the cached ones.
 * - OpenCode keeps one row per assistant message whose `tokens` grow until it completes, and
 *   counts reasoning apart from output.
 *
 * `output` is every output token billed (reasoning included); `reasoning` is the part of it
 * that was reasoning, where the CLI says.
 */

export interface TokenCounts {
  /** Input tokens neither read from nor written to the prompt cache. */
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  reasoning: number;
}

export const ZERO_TOKENS: Readonly<TokenCounts> = Object.freeze({ input: 0, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 });

const TOKEN_FIELDS = ["input", "cacheRead", "cacheWrite", "output", "reasoning"] as const;

export function addTokens(into: TokenCounts, add: Readonly<TokenCounts>, sign = 1): TokenCounts {
  for (const field of TOKEN_FIELDS) into[field] += sign * add[field];
  return into;
}

/** What a budget counts: everything the provider reported (reasoning is inside output). */
export function budgetTokens(t: Readonly<TokenCounts>): number {
  return t.input + t.cacheRead + t.cacheWrite + t.output;
}

/** One model call (or the growth of one, when a record is rewritten). */
export interface UsageCall {
  model: string;
  /** UTC day of the call, YYYY-MM-DD. */
  day: string;
  tokens: TokenCounts;
}

/** The tallies of one record source, keyed `day|model`, each with its number of calls. */
export type UsageTally = Record<string, TokenCounts & { calls: number }>;

export const tallyKey = (day: string, model: string): string => `${day}|${model}`;

export function splitTallyKey(key: string): { day: string; model: string } {
  const bar = key.indexOf("|");
  return { day: key.slice(0, bar), model: key.slice(bar + 1) };
}

export function addToTally(tally: UsageTally, call: UsageCall, calls: number): void {
  const key = tallyKey(call.day, call.model);
  const entry = (tally[key] ??= { ...ZERO_TOKENS, calls: 0 });
  addTokens(entry, call.tokens);
  entry.calls += calls;
}

const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0);

function dayOf(timestamp: unknown, fallback: string): string {
  if (typeof timestamp === "string" && /^\d{4}-\d{2}-\d{2}T/.test(timestamp)) {
    const parsed = new Date(timestamp);
    if (!Number.isNaN(parsed.getTime())) return parsed.toISOString().slice(0, 10);
  }
  if (typeof timestamp === "number" && Number.isFinite(timestamp)) return new Date(timestamp).toISOString().slice(0, 10);
  return fallback;
}

const today = (): string => new Date().toISOString().slice(0, 10);

function parseLine(line: string): Record<string, unknown> | undefined {
  if (line.length === 0 || line[0] !== "{") return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    // a torn or foreign line: records are appended while pu reads them
    return undefined;
  }
}

const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {});

/** Reads one Claude Code session file line by line; `line()` returns what the line adds. */
export class ClaudeRecordReader {
  // What was counted for each answer so far: a later line of the same answer adds only its growth.
  private readonly counted = new Map<string, UsageCall>();

  line(text: string): { call: UsageCall; calls: number }[] {
    const entry = parseLine(text);
    if (entry?.type !== "assistant") return [];
    const message = record(entry.message);
    const usage = record(message.usage);
    const id = typeof message.id === "string" ? message.id : undefined;
    if (!id || Object.keys(usage).length === 0) return [];
    const model = typeof message.model === "string" && message.model !== "" ? message.model : "unknown";
    // Claude's synthetic messages (errors shown in the transcript) are no model call.
    if (model === "<synthetic>") return [];
    const tokens: TokenCounts = {
      input: num(usage.input_tokens),
      cacheRead: num(usage.cache_read_input_tokens),
      cacheWrite: num(usage.cache_creation_input_tokens),
      output: num(usage.output_tokens),
      reasoning: num(record(usage.output_tokens_details).thinking_tokens),
    };
    const before = this.counted.get(id);
    const call = { model, day: before?.day ?? dayOf(entry.timestamp, today()), tokens };
    this.counted.set(id, call);
    if (!before) return [{ call, calls: 1 }];
    const growth = addTokens({ ...tokens }, before.tokens, -1);
    if (TOKEN_FIELDS.every((f) => growth[f] === 0)) return [];
    // Figures only grow within an answer; a smaller one is the same answer re-recorded.
    if (TOKEN_FIELDS.some((f) => growth[f] < 0)) {
      this.counted.set(id, before);
      return [];
    }
    return [{ call: { model, day: call.day, tokens: growth }, calls: 0 }];
  }
}

/** Reads one Codex rollout file line by line: calls are the growth of its running total. */
export class CodexRecordReader {
  private model = "unknown";
  private total: TokenCounts = { ...ZERO_TOKENS };

  line(text: string): { call: UsageCall; calls: number }[] {
    const entry = parseLine(text);
    if (!entry) return [];
    const payload = record(entry.payload);
    if (entry.type === "turn_context" && typeof payload.model === "string" && payload.model !== "") {
      this.model = payload.model;
      return [];
    }
    if (entry.type !== "event_msg" || payload.type !== "token_count") return [];
    const totalUsage = record(record(payload.info).total_token_usage);
    if (Object.keys(totalUsage).length === 0) return [];
    const cacheRead = num(totalUsage.cached_input_tokens);
    const cacheWrite = num(totalUsage.cache_write_input_tokens);
    const total: TokenCounts = {
      input: Math.max(0, num(totalUsage.input_tokens) - cacheRead - cacheWrite),
      cacheRead,
      cacheWrite,
      output: num(totalUsage.output_tokens),
      reasoning: num(totalUsage.reasoning_output_tokens),
    };
    const growth = addTokens({ ...total }, this.total, -1);
    // A total that went down is a new count (a thread continued from elsewhere): all of it is new.
    const fresh = TOKEN_FIELDS.some((f) => growth[f] < 0);
    this.total = total;
    const tokens = fresh ? total : growth;
    if (TOKEN_FIELDS.every((f) => tokens[f] === 0)) return [];
    return [{ call: { model: this.model, day: dayOf(entry.timestamp, today()), tokens }, calls: 1 }];
  }
}

/** One OpenCode assistant message (`message.data`), or undefined for anything else. */
export function openCodeMessageCall(data: string, createdMs: number): UsageCall | undefined {
  const message = parseLine(data);
  if (!message || message.role !== "assistant") return undefined;
  const tokens = record(message.tokens);
  const cache = record(tokens.cache);
  const reasoning = num(tokens.reasoning);
  const model = typeof message.modelID === "string" && message.modelID !== "" ? message.modelID : "unknown";
  const counts: TokenCounts = { input: num(tokens.input), cacheRead: num(cache.read), cacheWrite: num(cache.write), output: num(tokens.output) + reasoning, reasoning };
  // A message still streaming has no figures yet: not a call until it has some (or completed).
  const completed = record(message.time).completed !== undefined;
  if (!completed && TOKEN_FIELDS.every((f) => counts[f] === 0)) return undefined;
  return { model, day: dayOf(createdMs, today()), tokens: counts };
}

/**
 * Claude Code's folder for a working directory: every character other than a letter or digit
 * becomes `-` (`/srv/app/.pu` → `-srv-app--pu`).
 */
export function claudeProjectFolder(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/** `$0.42`, `$0.0031` for fractions of a cent, `?` when unknown (a model without a price). */
export function formatCost(costUsd: number | null | undefined): string {
  if (costUsd === null || costUsd === undefined) return "?";
  if (costUsd === 0) return "$0";
  if (costUsd < 0.01) return `$${costUsd.toFixed(4)}`;
  if (costUsd < 1000) return `$${costUsd.toFixed(2)}`;
  return `$${Math.round(costUsd).toLocaleString("en-US")}`;
}

/** `950`, `12.3k`, `4.1M`. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(n < 10_000_000 ? 1 : 0)}M`;
}

/** The lower of two limits, either of which may be unset (a ticket's and its step's, say). */
export function lowerLimit(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
