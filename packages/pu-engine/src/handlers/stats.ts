// stats, stats_prefer: usage per project, tool and model (state.json's project_llm_stats).
import { checkArgvValue } from "@pu/core/argv-value";
import { loadConfig, resolveAgentType } from "@pu/core/config";
import type { LlmModelUsage } from "@pu/core/operator-state";
import type { RequestOf, ResultOf, StatsRow } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type StatsContext = Pick<EngineServices, "queue" | "state">;

export async function handleStats(services: StatsContext, req: RequestOf<"stats">): Promise<ResultOf<"stats">> {
  const root = await services.state.project(req.projectRoot);
  // Unreadable state.json: no usage is known, which is not the same as none recorded.
  services.queue.store.ensureUsable();
  const stats = services.queue.store.state.project_llm_stats?.[root] ?? null;
  const rows: StatsRow[] = [];
  for (const tool of Object.values(stats?.tool_usage ?? {})) {
    for (const model of Object.values(tool.model_usage ?? {})) {
      rows.push({
        tool: tool.tool,
        model: model.model,
        runs: model.ticket_count ?? 0,
        successes: model.success_count ?? 0,
        failures: model.failure_count ?? 0,
        totalSeconds: model.total_time_secs ?? 0,
        lastUsed: tool.last_used,
        ...tokenFigures(model),
      });
    }
  }
  rows.sort((a, b) => a.tool.localeCompare(b.tool) || a.model.localeCompare(b.model));
  return { project: root, stats, rows };
}

/** Tokens and cost of a model's runs, as state.json keeps them (older files have none). */
function tokenFigures(model: LlmModelUsage): Pick<StatsRow, "tokens" | "costUsd"> {
  const parts = [model.input_tokens, model.output_tokens, model.cache_read_tokens, model.cache_write_tokens];
  if (parts.every((n) => n === undefined)) return { tokens: null, costUsd: null };
  const priced = model.cost_usd !== undefined && !model.cost_unknown_count;
  return { tokens: parts.reduce<number>((sum, n) => sum + (n ?? 0), 0), costUsd: priced ? (model.cost_usd ?? 0) : null };
}

export async function handleStatsPrefer(services: StatsContext, req: RequestOf<"stats_prefer">): Promise<ResultOf<"stats_prefer">> {
  const root = await services.state.project(req.projectRoot);
  // An unknown type would hold every ticket that names none when it is dispatched: refused now.
  resolveAgentType(await loadConfig(root), req.tool);
  // A preferred model goes after `--model` for every ticket that names none: refused now, not at each launch.
  if (req.model) checkArgvValue("--model", req.model);
  await services.queue.prefer(root, req.tool, req.model ?? null);
  return { project: root, preferredTool: req.tool, preferredModel: req.model ?? null };
}
