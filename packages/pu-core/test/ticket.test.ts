import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { compareTickets, nextTicketId, parseTicket, serializeTicket, ticketPath } from "../src/ticket.js";

const HAND_WRITTEN = `---
id: FEAT-0007
type: FEAT
title: Export the report as CSV
priority: P1
created_at: "2026-11-23T01:00:00Z"
agent: codex
vars: { AREA: reports }
---

Users want the monthly report as CSV.

- one row per line item
`;

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (isPuError(error) && error.code === "CONFIG_ERROR") return error.message;
    throw error;
  }
  throw new Error("expected a CONFIG_ERROR");
}

describe("tickets", () => {
  it("reads a hand-written ticket and writes it back so it reads the same", () => {
    const ticket = parseTicket(HAND_WRITTEN, "/p/.pu/tickets/queue/FEAT-0007.md");
    expect(ticket).toMatchObject({ id: "FEAT-0007", type: "FEAT", title: "Export the report as CSV", priority: "P1", agent: "codex", vars: { AREA: "reports" } });
    expect(ticket.description).toBe("Users want the monthly report as CSV.\n\n- one row per line item\n");
    expect(parseTicket(serializeTicket(ticket), "again.md")).toEqual(ticket);
    expect(parseTicket(HAND_WRITTEN.replace("priority: P1\n", ""), "x.md").priority).toBe("P2");
  });

  it("bad frontmatter names the file and the field", () => {
    expect(configError(() => parseTicket(HAND_WRITTEN.replace("priority: P1", "priority: urgent"), "/q/FEAT-0007.md"))).toMatch(/^\/q\/FEAT-0007\.md: priority: /);
    expect(configError(() => parseTicket(HAND_WRITTEN.replace("id: FEAT-0007", "id: FIX-0007"), "/q/a.md"))).toBe("/q/a.md: id: FIX-0007 does not match type FEAT (expected FEAT-NNNN)");
    expect(configError(() => parseTicket("just text\n", "/q/b.md"))).toMatch(/^\/q\/b\.md: a ticket starts with --- frontmatter/);
    expect(configError(() => parseTicket(HAND_WRITTEN.replace('created_at: "2026-11-23T01:00:00Z"\n', ""), "/q/c.md"))).toMatch(/^\/q\/c\.md: created_at: /);
  });

  it("numbers ids per type and orders the queue by priority, then age, then id", () => {
    expect(nextTicketId("FEAT", ["FEAT-0007", "FIX-0012", "FEAT-0002", "junk"])).toBe("FEAT-0008");
    expect(nextTicketId("SPIKE", [])).toBe("SPIKE-0001");
    const t = (id: string, priority: "P0" | "P1" | "P2" | "P3", created_at: string) => ({ id, type: id.split("-")[0]!, title: id, priority, created_at });
    const queue = [t("FIX-0002", "P2", "2026-01-02T00:00:00Z"), t("FEAT-0001", "P2", "2026-01-01T00:00:00Z"), t("TASK-0001", "P0", "2026-01-03T00:00:00Z")];
    expect(queue.sort(compareTickets).map((x) => x.id)).toEqual(["TASK-0001", "FEAT-0001", "FIX-0002"]);
  });

  it("a ticket path is always a file in its state folder", () => {
    expect(ticketPath("/p", "in-progress", "FEAT-0007")).toBe("/p/.pu/tickets/in-progress/FEAT-0007.md");
    expect(() => ticketPath("/p", "queue", "../../etc")).toThrow(/is not TYPE-NNNN/);
  });
});
