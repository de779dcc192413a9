import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import {
  checkTicketSize,
  checkTicketTitle,
  compareTickets,
  duplicateTicketIds,
  MAX_TICKET_BYTES,
  nextTicketId,
  parseTicket,
  serializeTicket,
  ticketIdArgument,
  ticketIdOfFileName,
  ticketPath,
} from "../src/ticket.js";

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

  it("ticket numbers have 4 to 9 digits: a 23-digit id is a bad file, never a float that breaks numbering", () => {
    const huge = "TASK-99999999999999999999999";
    expect(configError(() => parseTicket(HAND_WRITTEN.replace("id: FEAT-0007", `id: ${huge}`).replace("type: FEAT", "type: TASK"), "/q/x.md"))).toBe(
      "/q/x.md: id: must be TYPE-NNNN with 4 to 9 digits, e.g. FEAT-0007",
    );
    expect(nextTicketId("TASK", [huge, "TASK-0041", "TASK-1e+23"])).toBe("TASK-0042");
    expect(nextTicketId("TASK", ["TASK-000000123"])).toBe("TASK-0124");
    expect(() => nextTicketId("TASK", ["TASK-999999999"])).toThrow(/every TASK ticket number up to TASK-999999999 is used/);
    expect(ticketIdOfFileName("TASK-0001.md")).toBe("TASK-0001");
    expect(ticketIdOfFileName(`${huge}.md`)).toBeUndefined();
    expect(ticketIdOfFileName("TASK-0001.txt")).toBeUndefined();
  });

  it("an id typed in lower case means the ticket; anything else is quoted as typed", () => {
    expect(ticketIdArgument("feat-0007")).toBe("FEAT-0007");
    expect(ticketIdArgument("../../x")).toBe("../../x");
    expect(ticketIdArgument("x\x1b[2J")).toBe("x\x1b[2J");
  });

  it("a ticket file is at most 1 MiB", () => {
    expect(() => checkTicketSize(MAX_TICKET_BYTES, "/q/a.md")).not.toThrow();
    expect(configError(() => checkTicketSize(20_004_830, "/q/a.md"))).toBe("/q/a.md: 20.0 MB, over the 1 MiB limit of a ticket file (put long material in a file the description names)");
    expect(() => checkTicketSize(MAX_TICKET_BYTES + 1, "ticket TASK-0001", "INVALID_ARGUMENT")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("a title is one line of printable text", () => {
    expect(configError(() => parseTicket(HAND_WRITTEN.replace("title: Export the report as CSV", 'title: "evil \\e]0;pwned\\a"'), "/q/t.md"))).toBe(
      "/q/t.md: title: contains the control character \\x1b at position 6; a title is one line of printable text",
    );
    expect(checkTicketTitle("Add dark mode")).toBe("Add dark mode");
    expect(() => checkTicketTitle("two\nlines")).toThrow("the title contains the control character \\x0a at position 4");
  });

  it("an id in two folders: the ticket pu worked on keeps it, the other file is the duplicate", () => {
    expect(
      duplicateTicketIds([
        { state: "done", id: "TASK-0001" },
        { state: "queue", id: "TASK-0001" },
        { state: "queue", id: "TASK-0002" },
        { state: "in-progress", id: "FIX-0003" },
        { state: "done", id: "FIX-0003" },
        { state: "queue", id: "FIX-0003" },
      ]),
    ).toEqual([
      { id: "FIX-0003", owner: "in-progress", duplicates: ["queue", "done"] },
      { id: "TASK-0001", owner: "done", duplicates: ["queue"] },
    ]);
    expect(duplicateTicketIds([{ state: "queue", id: "TASK-0001" }])).toEqual([]);
  });
});
