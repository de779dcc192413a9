// `pu usage` and `pu stats` for every project: tokens and cost per model and per agent (from
// the agent CLIs' records), then runs, successes, failures and time per tool and model as a
// table, and the same runs as a bar chart (successes and failures stacked).
import { formatCost, formatTokens } from "@pu/core/usage";
import type { StatsRow, UsageResult } from "@pu/ipc/protocol";
import { call } from "./api.js";
import { clear, duration, h, svg } from "./dom.js";
import { store } from "./store.js";
import { sayError } from "./ui.js";

function chart(rows: StatsRow[]): SVGElement {
  const barH = 22;
  const labelW = 180;
  const width = 520;
  const max = Math.max(1, ...rows.map((r) => r.runs));
  const scale = (n: number) => ((width - labelW - 40) * n) / max;
  const root = svg("svg", { class: "usage-chart", viewBox: `0 0 ${width} ${rows.length * (barH + 6) + 6}`, role: "img", "aria-label": "runs per tool and model" });
  rows.forEach((row, i) => {
    const y = 6 + i * (barH + 6);
    root.appendChild(svg("text", { x: 0, y: y + 15 }, `${row.tool} · ${row.model}`.slice(0, 28)));
    root.appendChild(svg("rect", { class: "ok", x: labelW, y, width: scale(row.successes), height: barH }, svg("title", {}, `${row.successes} succeeded`)));
    root.appendChild(svg("rect", { class: "failed", x: labelW + scale(row.successes), y, width: scale(row.failures), height: barH }, svg("title", {}, `${row.failures} failed`)));
    root.appendChild(svg("text", { x: labelW + scale(row.runs) + 4, y: y + 15 }, String(row.runs)));
  });
  return root;
}

function tokensTable(result: UsageResult, first: string): HTMLElement {
  const row = (cells: (string | number)[]) => h("tr", {}, ...cells.map((c) => h("td", {}, String(c))));
  const figures = (r: UsageResult["total"]) => [formatTokens(r.input), formatTokens(r.cacheRead), formatTokens(r.cacheWrite), formatTokens(r.output), r.calls, formatCost(r.costUsd)];
  return h(
    "div",
    { className: "table-scroll" },
    h(
      "table",
      { className: `tokens tokens-by-${result.by}` },
      h("thead", {}, h("tr", {}, ...[first, "Input", "Cache read", "Cache write", "Output", "Calls", "Cost"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...result.rows.map((r) => row([result.by === "agent" ? `${r.label} (${r.key})` : r.key, ...figures(r)])), row(["total", ...figures(result.total)])),
    ),
  );
}

export function renderUsage(view: HTMLElement): () => void {
  clear(view);
  const list = h("div", {}, h("p", {}, "Loading usage…"));
  view.append(h("h2", {}, "Usage"), list);
  void (async () => {
    try {
      const all = await Promise.all(store.roots().map((root) => call("stats", { projectRoot: root })));
      const tokens = await Promise.all(store.roots().map(async (root) => [await call("usage", { projectRoot: root, by: "model" }), await call("usage", { projectRoot: root, by: "agent" })] as const));
      clear(list);
      for (const [byModel, byAgent] of tokens) {
        list.append(
          h(
            "section",
            { className: "usage-tokens", "data-project": byModel.projectRoot },
            h("h3", {}, byModel.projectRoot, h("small", {}, " tokens and cost")),
            byModel.rows.length === 0 ? h("p", { className: "empty" }, "No usage recorded yet.") : h("div", {}, tokensTable(byModel, "Model"), tokensTable(byAgent, "Agent")),
            byModel.unknownAgents > 0 ? h("p", { className: "empty" }, `${byModel.unknownAgents} agent(s) left no usage record (unknown, not counted).`) : null,
          ),
        );
      }
      for (const result of all) {
        const rows = result.rows;
        list.append(
          h(
            "section",
            { className: "usage", "data-project": result.project },
            h("h3", {}, result.project, result.stats?.preferred_tool ? h("small", {}, ` preferred ${result.stats.preferred_tool}${result.stats.preferred_model ? `:${result.stats.preferred_model}` : ""}`) : null),
            rows.length === 0
              ? h("p", { className: "empty" }, "No tickets finished yet.")
              : h(
                  "div",
                  { className: "table-scroll" },
                  h(
                    "table",
                    { className: "stats" },
                    h("thead", {}, h("tr", {}, ...["Tool", "Model", "Runs", "OK", "Failed", "Time", "Last used"].map((t) => h("th", {}, t)))),
                    h("tbody", {}, ...rows.map((r) => h("tr", {}, h("td", {}, r.tool), h("td", {}, r.model), h("td", {}, r.runs), h("td", {}, r.successes), h("td", {}, r.failures), h("td", {}, duration(r.totalSeconds)), h("td", {}, r.lastUsed)))),
                  ),
                ),
            rows.length > 0 ? chart(rows) : null,
          ),
        );
      }
    } catch (error) {
      sayError(error);
    }
  })();
  return () => undefined;
}
