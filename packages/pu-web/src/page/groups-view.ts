// Multi-agent groups: for each group the compare table (variant, agent, state, time, +/−, gate,
// judge rank) as `pu group compare` prints it, each member's diff on demand, and pick (merge
// the chosen member, clean the others), confirmed.
import type { GroupMemberView, GroupView } from "@pu/ipc/protocol";
import { call } from "./api.js";
import { renderPatch } from "./diff-view.js";
import { clear, duration, h } from "./dom.js";
import { store } from "./store.js";
import { renderLiveView } from "./live-view.js";
import { act, button, dialog, look } from "./ui.js";

function memberRow(group: GroupView, member: GroupMemberView, diffBox: HTMLElement): HTMLElement {
  const gate = member.gate ? `${member.gate.passed ? "passed" : "failed"} (${member.gate.attempts})` : "-";
  const diff = member.diff ? `+${member.diff.insertions} −${member.diff.deletions}` : "-";
  const canPick = group.phase === "complete" && !group.picked && member.worktreeId !== null;
  return h(
    "tr",
    { "data-variant": member.variant, className: group.winner === member.variant ? "winner" : "" },
    h("td", {}, member.variant, group.winner === member.variant ? " ★" : ""),
    h("td", {}, member.model ? `${member.agentType}:${member.model}` : member.agentType, member.host ? h("span", { className: "host", "data-host": member.host }, ` on ${member.host}`) : null),
    h("td", { "data-member-state": member.state }, member.state),
    h("td", {}, duration(member.seconds)),
    h("td", {}, diff),
    h("td", {}, gate),
    h("td", {}, member.judgeRank === null ? "-" : String(member.judgeRank)),
    h(
      "td",
      {},
      member.worktreeId
        ? button(
            "Diff",
            (b) =>
              void look(b, async () => {
                const result = await call("group_diff", { projectRoot: group.project, groupId: group.groupId, variant: member.variant });
                diffBox.replaceChildren(h("h4", {}, `${member.variant}`), renderPatch(result));
              }),
            { "data-action": "member-diff" },
          )
        : null,
      canPick
        ? button(
            "Pick",
            (b) =>
              void dialog(`Pick ${member.variant}?`, "Merges this member's branch and cleans the other members' worktrees.", "Pick and merge", [], true).then(
                (ok) =>
                  ok &&
                  act(b, async () => {
                    const result = await call("group_pick", { projectRoot: group.project, groupId: group.groupId, variant: member.variant });
                    return `picked ${result.variant} of ${result.groupId}${result.merge.commit ? ` (merged at ${result.merge.commit.slice(0, 10)})` : ""}`;
                  }),
              ),
            { className: "primary", "data-action": "pick" },
          )
        : null,
    ),
  );
}

/** A member's diff a person opened outlives the view's redraws. */
const diffBoxes = new Map<string, HTMLElement>();

function groupBlock(group: GroupView): HTMLElement {
  const diffBox = diffBoxes.get(group.groupId) ?? h("div", { className: "member-diff" });
  diffBoxes.set(group.groupId, diffBox);
  return h(
    "section",
    { className: "group", "data-group-id": group.groupId },
    h("h3", {}, group.groupId, h("small", {}, ` ${group.kind} · ${group.phase}${group.winner ? ` · winner ${group.winner}` : ""}${group.picked ? ` · picked ${group.picked}` : ""}`)),
    group.failureReasons.length > 0 ? h("p", { className: "error" }, group.failureReasons.join("; ")) : null,
    h(
      "div",
      { className: "table-scroll" },
      h(
        "table",
        { className: "compare" },
        h("thead", {}, h("tr", {}, ...["Variant", "Agent", "State", "Time", "+/−", "Gate", "Judge", ""].map((t) => h("th", {}, t)))),
        h("tbody", {}, ...group.members.map((m) => memberRow(group, m, diffBox))),
      ),
    ),
    diffBox,
  );
}

export function renderGroups(view: HTMLElement): () => void {
  return renderLiveView(view, "Groups", async (list) => {
    const all = await Promise.all(store.roots().map((root) => call("group_list", { projectRoot: root })));
    const groups = all.flatMap((r) => r.groups).sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    clear(list);
    if (groups.length === 0) list.append(h("p", { className: "empty" }, "No groups yet (`pu group run`)."));
    for (const group of groups) list.append(groupBlock(group));
  });
}
