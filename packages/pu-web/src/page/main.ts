// The page's entry: the session key from the login redirect, the status socket, the router
// (`#/…`), and the header. Each view draws into <main> and returns what stops it (sockets,
// listeners) when the person goes elsewhere.
import { renderAgents } from "./agents-view.js";
import { hasSessionKey, isSignedOut, markSignedOut, SIGNED_OUT_LINE, takeKeyFromAddress, whenSignedOut } from "./api.js";
import { renderDiff } from "./diff-view.js";
import { h } from "./dom.js";
import { renderGroups } from "./groups-view.js";
import { watchForWaits } from "./notify.js";
import { renderPlans } from "./plans-view.js";
import { renderQueue } from "./queue-view.js";
import { store } from "./store.js";
import { renderTerminal } from "./terminal-view.js";
import { renderUsage } from "./usage-view.js";

const view = document.getElementById("view")!;
let stopView: () => void = () => undefined;

const NAV: [string, string][] = [
  ["#/", "Agents"],
  ["#/queue", "Queue"],
  ["#/groups", "Groups"],
  ["#/plans", "Plans"],
  ["#/usage", "Usage"],
];

function route(): void {
  stopView();
  if (isSignedOut()) return;
  const hash = location.hash || "#/";
  const [path = "", query = ""] = hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a")) link.classList.toggle("current", link.getAttribute("href") === `#/${parts[0] ?? ""}`);
  if (parts[0] === "agent" && parts[1]) stopView = renderTerminal(view, parts[1], query === "ro");
  else if (parts[0] === "diff" && parts[1] && parts[2]) stopView = renderDiff(view, parts[1], parts[2]);
  else if (parts[0] === "queue") stopView = renderQueue(view);
  else if (parts[0] === "groups") stopView = renderGroups(view);
  else if (parts[0] === "plans") stopView = renderPlans(view);
  else if (parts[0] === "usage") stopView = renderUsage(view);
  else stopView = renderAgents(view);
}

function header(): void {
  const connection = h("span", { id: "connection", "data-connected": "false" }, "connecting…");
  store.onStatus(() => {
    connection.textContent = store.connected ? "live" : isSignedOut() ? "signed out" : "reconnecting…";
    connection.setAttribute("data-connected", String(store.connected));
  });
  const notifications =
    "Notification" in window && Notification.permission === "default"
      ? h("button", { type: "button", id: "enable-notifications" }, "Notify me")
      : null;
  notifications?.addEventListener("click", () => void Notification.requestPermission().then(() => notifications.remove()));
  document.getElementById("top")!.append(h("strong", { className: "brand" }, "pu"), h("nav", {}, ...NAV.map(([href, label]) => h("a", { href }, label))), connection, notifications ?? "");
}

// Without a key (a page opened by hand, a bookmark, a server restarted since) nothing here can
// work: one line says what to do instead of views that fail one by one.
whenSignedOut(() => {
  stopView();
  stopView = () => undefined;
  view.replaceChildren(h("p", { className: "signed-out", "data-signed-out": "true" }, SIGNED_OUT_LINE));
  document.getElementById("connection")?.replaceChildren("signed out");
});
takeKeyFromAddress();
header();
if (!hasSessionKey()) markSignedOut();
watchForWaits();
if (!isSignedOut()) store.connect();
// The first snapshot may come after the first draw: projects are needed by the forms.
let firstSnapshot = true;
store.onStatus(() => {
  if (firstSnapshot && store.loaded) {
    firstSnapshot = false;
    route();
  }
});
window.addEventListener("hashchange", route);
route();
