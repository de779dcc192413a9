// Plan sessions: phase, exploration stage, iteration, the task graph drawn as a graph (dagre lays
// it out: tasks as nodes coloured by status, each `blockedBy` an arrow from the blocker), the
// evidence log per task on demand, and approve / cancel.
import { Graph, layout } from "@dagrejs/dagre";
import type { PlanView } from "@pu/ipc/protocol";
import { call } from "./api.js";
import { clear, h, svg } from "./dom.js";
import { store } from "./store.js";
import { renderLiveView } from "./live-view.js";
import { act, button, dialog, look } from "./ui.js";

const NODE_W = 170;
const NODE_H = 44;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function taskGraph(plan: PlanView): SVGElement {
  const g = new Graph();
  g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 40, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set(plan.tasks.map((t) => t.id));
  for (const task of plan.tasks) g.setNode(task.id, { width: NODE_W, height: NODE_H });
  for (const task of plan.tasks) for (const blocker of task.blockedBy) if (known.has(blocker)) g.setEdge(blocker, task.id);
  layout(g);
  const { width = 200, height = 60 } = g.graph();
  const root = svg("svg", { class: "task-graph", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `task graph of ${plan.sessionId}` });
  root.appendChild(svg("defs", {}, svg("marker", { id: `arrow-${plan.sessionId}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, svg("path", { d: "M0,0 L10,5 L0,10 z" }))));
  for (const edge of g.edges()) {
    const points = g.edge(edge).points ?? [];
    const d = points.map((p: { x: number; y: number }, i: number) => `${i === 0 ? "M" : "L"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    root.appendChild(svg("path", { class: "edge", d, "marker-end": `url(#arrow-${plan.sessionId})`, "data-edge": `${edge.v}->${edge.w}` }));
  }
  for (const task of plan.tasks) {
    const node = g.node(task.id);
    const x = node.x - NODE_W / 2;
    const y = node.y - NODE_H / 2;
    root.appendChild(
      svg(
        "g",
        { class: `task task-${task.status}`, "data-task-id": task.id, "data-task-status": task.status, transform: `translate(${x.toFixed(1)},${y.toFixed(1)})` },
        svg("title", {}, `${task.id}: ${task.subject} (${task.status}${task.worker ? `, ${task.worker}` : ""}${task.host ? ` on ${task.host}` : ""})`),
        svg("rect", { width: NODE_W, height: NODE_H, rx: 6 }),
        svg("text", { x: 8, y: 17 }, cut(`${task.id} · ${task.status}`, 26)),
        svg("text", { x: 8, y: 34, class: "subject" }, cut(task.subject, 26)),
      ),
    );
  }
  return root;
}

/** What a person opened under a plan (its design or evidence) outlives the view's redraws. */
const panels = new Map<string, HTMLElement>();

function planBlock(project: string, plan: PlanView): HTMLElement {
  const key = `${project}\0${plan.sessionId}`;
  const evidence = panels.get(key) ?? h("div", { className: "evidence" });
  panels.set(key, evidence);
  const approvable = plan.phase === "PLANNING" && plan.approvedAt === null;
  const finished = ["COMPLETE", "FAILED", "CANCELLED"].includes(plan.phase);
  return h(
    "section",
    { className: "plan", "data-plan-id": plan.sessionId, "data-phase": plan.phase },
    h("h3", {}, plan.sessionId, h("small", {}, ` ${plan.phase} · exploration ${plan.explorationStage} · iteration ${plan.iteration}`)),
    h("p", { className: "goal" }, plan.goal),
    plan.failure ? h("p", { className: "error" }, plan.failure) : null,
    ...plan.problems.map((p) => h("p", { className: "error" }, p)),
    plan.tasks.length > 0 ? h("div", { className: "graph-scroll" }, taskGraph(plan)) : h("p", { className: "empty" }, "No tasks yet."),
    h(
      "div",
      { className: "card-actions" },
      approvable
        ? button("Approve", (b) => void act(b, async () => {
      await call("plan_approve", { projectRoot: project, sessionId: plan.sessionId });
      return `approved ${plan.sessionId}`;
    }), { className: "primary", "data-action": "plan-approve" })
        : null,
      !finished
        ? button(
            "Cancel",
            (b) =>
              void dialog(`Cancel ${plan.sessionId}?`, "Stops its agents; the integration branch and worktrees stay.", "Cancel the plan", [], true).then(
                (ok) => ok && act(b, async () => {
      await call("plan_cancel", { projectRoot: project, sessionId: plan.sessionId });
      return `cancelled ${plan.sessionId}`;
    }),
              ),
            { className: "danger", "data-action": "plan-cancel" },
          )
        : null,
      button(
        "Design",
        (b) =>
          void look(b, async () => {
            const status = await call("plan_status", { projectRoot: project, sessionId: plan.sessionId });
            evidence.replaceChildren(h("pre", { className: "design", "data-design-for": plan.sessionId }, status.design ?? "(no design.md yet: the planner has not written it)"));
          }),
        { "data-action": "plan-design" },
      ),
      button(
        "Evidence",
        (b) =>
          void look(b, async () => {
            const result = await call("plan_evidence", { projectRoot: project, sessionId: plan.sessionId });
            evidence.replaceChildren(
              h(
                "ul",
                {},
                ...result.evidenceLog.map((entry) =>
                  h("li", {}, `${entry.timestamp} ${entry.type}${entry.task_id ? ` ${entry.task_id}` : ""}${entry.status ? ` ${entry.status}` : ""}`, entry.summary ? h("div", {}, entry.summary) : null, entry.output_tail ? h("pre", {}, entry.output_tail) : null),
                ),
              ),
            );
          }),
        { "data-action": "plan-evidence" },
      ),
    ),
    evidence,
  );
}

export function renderPlans(view: HTMLElement): () => void {
  return renderLiveView(view, "Plans", async (list) => {
    const all = await Promise.all(store.roots().map(async (root) => ({ root, result: await call("plan_list", { projectRoot: root }) })));
    clear(list);
    let count = 0;
    for (const { root, result } of all) {
      for (const plan of result.plans) {
        count++;
        list.append(planBlock(root, plan));
      }
      for (const bad of result.unreadable) list.append(h("p", { className: "error" }, `${bad.sessionId}: ${bad.reason} (${bad.file})`));
    }
    if (count === 0) list.append(h("p", { className: "empty" }, "No plan sessions (`pu plan start`)."));
  });
}
