// Every agent of every project the daemon knows, grouped by project and worktree, with the words
// `pu status` uses; live from the status socket. Spawn at the top; per agent: open its terminal,
// send a prompt, bench/play, kill (confirmed: a kill loses the agent's unsaved session).
import type { AgentView, WorktreeView } from "@pu/ipc/protocol";
import { escapeControlCharacters } from "@pu/core/names";
import { statusLabel } from "@pu/core/status-label";
import { formatCost } from "@pu/core/usage";
import { call } from "./api.js";
import { clear, duration, h } from "./dom.js";
import { store } from "./store.js";
import { act, button, dialog } from "./ui.js";

const AGENT_TYPES = ["claude", "codex", "opencode", "terminal"];

function sendPrompt(agentId: string, name: string): void {
  void dialog(`Send to ${name}`, "The text is typed into the agent's terminal and submitted.", "Send", [{ name: "text", label: "Prompt", multiline: true, required: true }]).then(
    (values) => values && act(null, async () => {
      await call("type_text", { agentId, text: values.text, submit: true });
      return `sent to ${agentId}`;
    }),
  );
}

export function agentActions(project: string, agent: AgentView, inTerminal = false): HTMLElement {
  const benched = agent.suspended === true;
  const alive = agent.status !== "broken";
  return h(
    "span",
    { className: "actions" },
    inTerminal ? null : h("a", { href: `#/agent/${agent.id}`, className: "button", "data-action": "open" }, "Terminal"),
    alive && !benched ? button("Send", () => sendPrompt(agent.id, agent.name), { "data-action": "send" }) : null,
    alive && !benched
      ? button("Bench", (b) => void act(b, async () => {
      await call("suspend", { projectRoot: project, target: agent.id });
      return `benched ${agent.id}`;
    }), { "data-action": "bench" })
      : null,
    benched ? button("Play", (b) => void act(b, async () => {
      await call("resume", { projectRoot: project, agentId: agent.id });
      return `resumed ${agent.id}`;
    }), { "data-action": "play" }) : null,
    alive
      ? button(
          "Kill",
          (b) =>
            void dialog(`Kill ${agent.name}?`, `${agent.id} stops now; its worktree and branch stay (clean them from the diff view).`, "Kill", [], true).then(
              (ok) =>
                ok &&
                act(b, async () => {
                  const result = await call("kill", { projectRoot: project, target: agent.id });
                  const skipped = result.skipped.find((s) => s.agentId === agent.id);
                  return skipped ? `${agent.id} was not killed: ${skipped.reason}` : `killed ${agent.id}`;
                }),
            ),
          { "data-action": "kill", className: "danger" },
        )
      : null,
  );
}

function agentRow(project: string, agent: AgentView): HTMLElement {
  const label = statusLabel(agent);
  return h(
    "div",
    { className: "agent", "data-agent-id": agent.id, "data-project": project },
    h("span", { className: "agent-name" }, h("a", { href: `#/agent/${agent.id}` }, agent.name), h("small", {}, ` ${agent.id} · ${agent.agentType}${agent.host ? ` · on ${agent.host}` : ""}`)),
    h("span", { className: `status status-${agent.status}`, "data-status": label }, label),
    h("span", { className: "idle", title: "idle" }, duration(agent.idleSeconds)),
    h("span", { className: "cost", title: agent.usage === null ? "no usage record" : agent.usage?.costUsd === null ? "a model without a price" : "cost so far" }, agent.usage ? formatCost(agent.usage.costUsd) : "-"),
    agentActions(project, agent),
    agent.lastScreenLine ? h("div", { className: "screen-line" }, agent.lastScreenLine) : null,
  );
}

function worktreeBlock(project: string, wt: WorktreeView): HTMLElement {
  const agents = Object.values(wt.agents).sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
  return h(
    "section",
    { className: "worktree", "data-worktree-id": wt.id },
    h(
      "h3",
      {},
      wt.name,
      h("small", {}, ` ${wt.id} · ${wt.branch} · ${wt.status}${wt.host ? ` · on ${wt.host}` : ""}`),
      h("a", { href: `#/diff/${encodeURIComponent(project)}/${wt.id}`, className: "button", "data-action": "diff" }, "Diff & merge"),
    ),
    ...agents.map((agent) => agentRow(project, agent)),
  );
}

function spawnForm(): HTMLElement {
  const project = h("select", { name: "project", "aria-label": "Project" }, ...store.roots().map((root) => h("option", { value: root }, root)));
  const prompt = h("textarea", { name: "prompt", rows: 2, placeholder: "Prompt (optional for a terminal)", "aria-label": "Prompt" });
  const agent = h("select", { name: "agent", "aria-label": "Agent type" }, ...AGENT_TYPES.map((type) => h("option", { value: type }, type)));
  const where = h("select", { name: "where", "aria-label": "Where" }, h("option", { value: "worktree" }, "new worktree"), h("option", { value: "root" }, "project root"));
  const name = h("input", { name: "name", type: "text", placeholder: "name (optional)", "aria-label": "Name" });
  // Where it runs: this machine, or a host (`pu host add`); filled in once the hosts are known.
  const machine = h("select", { name: "on", "aria-label": "Machine" }, h("option", { value: "" }, "this machine"));
  void call("host_list", {})
    .then((result) => machine.append(...result.hosts.map((host) => h("option", { value: host.name }, `on ${host.name}${host.link.state === "unreachable" ? " (unreachable)" : ""}`))))
    .catch(() => undefined);
  const submit = h("button", { type: "submit", className: "primary", "data-action": "spawn" }, "Spawn");
  const form = h("form", { className: "spawn-form" }, project, agent, where, machine, name, prompt, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void act(submit, async () => {
      const fields: Record<string, unknown> = { projectRoot: project.value, agent: agent.value, root: where.value === "root" };
      if (prompt.value.trim()) fields.prompt = prompt.value;
      if (name.value.trim()) fields.name = name.value.trim();
      if (machine.value) fields.on = machine.value;
      const result = await call("spawn", fields);
      prompt.value = "";
      name.value = "";
      return `spawned ${result.agentId}${result.worktreeId ? ` in ${result.worktreeId}` : ""}${result.host ? ` on ${result.host}` : ""}`;
    });
  });
  return h("details", { className: "spawn", open: store.agents().length === 0 }, h("summary", {}, "Spawn an agent"), form);
}

export function renderAgents(view: HTMLElement): () => void {
  const list = h("div", { className: "agent-list" });
  clear(view);
  view.append(h("h2", {}, "Agents"), spawnForm(), list);
  const draw = () => {
    clear(list);
    if (!store.connected && !store.loaded) list.append(h("p", {}, "Connecting to pu…"));
    for (const root of store.roots()) {
      const project = store.projects.get(root)!;
      const section = h("section", { className: "project", "data-project": root }, h("h2", { className: "project-root" }, root));
      if (project.error) section.append(h("p", { className: "error" }, project.error));
      const report = project.report;
      // What pu could not read for this report (a corrupt hosts.json, a host that does not
      // answer…), a line each as `pu status` says them (control characters as \xNN); text
      // nodes, never markup.
      const problems = report?.problems ?? [];
      if (problems.length > 0) {
        const lines = problems.map((problem) => h("li", { className: "problem", "data-problem": "" }, `problem: ${escapeControlCharacters(problem)}`));
        section.append(h("ul", { className: "problems", "aria-label": "problems" }, ...lines));
      }
      if (report) {
        const rootAgents = Object.values(report.agents);
        if (rootAgents.length > 0) section.append(h("section", { className: "worktree root" }, h("h3", {}, "project root"), ...rootAgents.map((agent) => agentRow(root, agent))));
        for (const wt of Object.values(report.worktrees).sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1))) section.append(worktreeBlock(root, wt));
        if (rootAgents.length === 0 && Object.keys(report.worktrees).length === 0) section.append(h("p", { className: "empty" }, "No agents yet."));
      }
      list.append(section);
    }
  };
  draw();
  // Redraw at most once a frame however fast events come (a 30-agent project can send many).
  let queued = false;
  const off = store.onStatus(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw();
    });
  });
  return off;
}
