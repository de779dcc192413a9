// A browser notification (and the tab title) when an agent starts waiting for a person: its turn
// ended or a dialog asks. Once per wait: the agent must leave `waiting` before it notifies again.
import { statusLabel, waitsForPerson } from "@pu/core/status-label";
import { store } from "./store.js";

const waiting = new Set<string>();
let primed = false;

export function watchForWaits(): void {
  store.onStatus(() => {
    if (!store.loaded) return;
    const now = new Set<string>();
    for (const { agent } of store.agents()) {
      if (!waitsForPerson(agent)) continue;
      now.add(agent.id);
      // Waits already there when the page opened are counted in the title, not announced.
      if (primed && !waiting.has(agent.id)) announce(agent.id, agent.name, statusLabel(agent));
    }
    waiting.clear();
    for (const id of now) waiting.add(id);
    primed = true;
    document.title = now.size > 0 ? `(${now.size}) pu — waiting for you` : "pu";
  });
}

function announce(agentId: string, name: string, label: string): void {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const notification = new Notification(`${name} is ${label}`, { body: agentId, tag: `pu-${agentId}` });
  notification.onclick = () => {
    window.focus();
    location.hash = `#/agent/${agentId}`;
  };
}
