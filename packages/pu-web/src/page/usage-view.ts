// `pu stats` for every project: runs, successes, failures and time per tool and model as a
// table, and the same runs as a bar chart (successes and failures stacked).
import type { StatsRow } from "@pu/ipc/protocol";
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

export function renderUsage(view: HTMLElement): () => void {
  clear(view);
  const list = h("div", {}, h("p", {}, "Loading usage…"));
  view.append(h("h2", {}, "Usage"), list);
  void (async () => {
    try {
      const all = await Promise.all(store.roots().map((root) => call("stats", { projectRoot: root })));
      clear(list);
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
