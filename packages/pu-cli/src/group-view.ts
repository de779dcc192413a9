// How a multi-agent group reads in text: its phase line, and one row per member (compare).
import { formatCost } from "@pu/core/usage";
import type { GroupMemberView, GroupView } from "@pu/ipc/protocol";
import { formatDuration, truncate } from "./format.js";
import type { HumanOutput } from "./report.js";

function counts(group: GroupView): string {
  const by = (state: GroupMemberView["state"]) => group.members.filter((m) => m.state === state).length;
  const parts = [
    `${by("done")} done`,
    by("failed") ? `${by("failed")} failed` : "",
    by("cancelled") ? `${by("cancelled")} cancelled` : "",
    by("running") ? `${by("running")} running` : "",
    by("pending") ? `${by("pending")} pending` : "",
  ];
  return parts.filter((p) => p !== "").join(", ");
}

export function writeGroupSummary(out: HumanOutput, group: GroupView): void {
  const origin = group.ticketId ? `  ticket ${group.ticketId} step ${group.stepName}` : "";
  out.line(`${group.groupId}  ${group.phase}  ${group.kind}, ${group.members.length} members (${counts(group)})  aggregate ${group.aggregate}${group.join === "first" ? ", join first" : ""}${origin}`);
  if (group.winner) out.line(`  winner: ${group.winner}${group.picked ? ` (picked ${group.picked})` : ""}`);
  else if (group.picked) out.line(`  picked: ${group.picked}`);
  for (const reason of group.failureReasons) out.line(`  ${group.phase === "failed" ? "failed" : "note"}: ${reason}`);
}

export function writeGroupStatus(out: HumanOutput, group: GroupView): void {
  writeGroupSummary(out, group);
  for (const m of group.members) {
    const where = `${m.agentId ? ` ${m.agentId}` : ""}${m.host ? ` on ${m.host}` : ""}`;
    out.line(`  ${m.state.padEnd(9)} ${m.variant}${where}${m.reason ? `: ${m.reason}` : ""}`);
  }
}

const COLUMNS = ["VARIANT", "AGENT", "MODEL", "STATE", "TIME", "COST", "FILES", "+/-", "GATE", "RANK"] as const;

/** A HOST column once a member runs on a host. */
function compareRows(group: GroupView, hosts: boolean): string[][] {
  return group.members.map((m) => [
    m.variant + (group.winner === m.variant ? " *" : ""),
    ...(hosts ? [m.host ?? "local"] : []),
    m.agentType,
    m.model ?? "-",
    m.state,
    m.seconds === null ? "-" : formatDuration(m.seconds),
    m.usage ? formatCost(m.usage.costUsd) : "-",
    m.diff ? String(m.diff.files) : "-",
    m.diff ? `+${m.diff.insertions} -${m.diff.deletions}` : "-",
    m.gate ? `${m.gate.passed ? "pass" : "fail"} (${m.gate.attempts})` : "-",
    m.judgeRank === null ? "-" : String(m.judgeRank),
  ]);
}

export function writeGroupCompare(out: HumanOutput, group: GroupView): void {
  writeGroupSummary(out, group);
  const hosts = group.members.some((m) => m.host);
  const columns = hosts ? [COLUMNS[0], "HOST", ...COLUMNS.slice(1)] : [...COLUMNS];
  const rows = [columns, ...compareRows(group, hosts)].map((row) => row.map((cell) => truncate(cell, 40)));
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  for (const row of rows) out.line(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd());
  const reasons = group.reasons;
  if (typeof reasons === "string") out.line(`judge: ${reasons}`);
  else if (reasons) for (const [v, why] of Object.entries(reasons)) out.line(`judge on ${v}: ${why}`);
}
