// Ticket files on disk: moves never replace a file, an id in two folders is reported naming both,
// and two names of one file (a crash between a move's link and unlink) read as one ticket.
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ticketPath } from "@pu/core/ticket";
import { ensureTicketDirs, findTicket, moveTicket, scanTickets, ticketSummary } from "../src/orchestration/queue/tickets.js";

const ticket = (id: string, title: string) => `---\nid: ${id}\ntype: ${id.split("-")[0]}\ntitle: ${title}\ncreated_at: "2026-01-01T00:00:00Z"\n---\n\nbody of ${title}\n`;

describe("ticket files", () => {
  let root: string;
  beforeEach(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), "pu-tickets-"));
    await ensureTicketDirs(root);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("a move never replaces a ticket of the same id: INVALID_STATE naming both files, both kept", async () => {
    const done = ticketPath(root, "done", "TASK-0001");
    const inProgress = ticketPath(root, "in-progress", "TASK-0001");
    writeFileSync(done, ticket("TASK-0001", "original"));
    writeFileSync(inProgress, ticket("TASK-0001", "intruder"));
    await expect(moveTicket(root, "TASK-0001", "in-progress", "done")).rejects.toMatchObject({
      code: "INVALID_STATE",
      message: `${inProgress} was not moved: ${done} already exists (a ticket id is never used twice; rename or remove one of them)`,
    });
    expect(readFileSync(done, "utf8")).toContain("title: original");
    expect(readFileSync(inProgress, "utf8")).toContain("title: intruder");
  });

  it("an id in two folders: the done ticket is listed and found, the dropped one is a problem naming both", async () => {
    const done = ticketPath(root, "done", "TASK-0001");
    const dropped = ticketPath(root, "queue", "TASK-0001");
    writeFileSync(done, ticket("TASK-0001", "original"));
    writeFileSync(dropped, ticket("TASK-0001", "intruder"));
    const all = await scanTickets(root);
    expect(all.tickets.map((t) => [t.id, t.state, t.title])).toEqual([["TASK-0001", "done", "original"]]);
    expect(all.problems).toEqual([{ file: dropped, message: `${dropped}: id TASK-0001 is already used by ${done}; this file is not read or run (rename or remove one of them)` }]);
    // The queue alone (what dispatch scans) offers nothing to run.
    expect((await scanTickets(root, ["queue"])).tickets).toEqual([]);
    expect((await findTicket(root, "TASK-0001")).title).toBe("original");
  });

  it("two names of one file (a crash between a move's link and unlink) are one ticket, settled by the next move", async () => {
    const queued = ticketPath(root, "queue", "TASK-0002");
    const inProgress = ticketPath(root, "in-progress", "TASK-0002");
    writeFileSync(queued, ticket("TASK-0002", "halfway"));
    linkSync(queued, inProgress);
    const scan = await scanTickets(root);
    expect(scan.problems).toEqual([]);
    expect(scan.tickets.map((t) => [t.id, t.state])).toEqual([["TASK-0002", "in-progress"]]);
    expect(await moveTicket(root, "TASK-0002", "in-progress", "queue")).toBe(queued);
    expect(existsSync(inProgress)).toBe(false);
    expect((await scanTickets(root)).tickets.map((t) => [t.id, t.state])).toEqual([["TASK-0002", "queue"]]);
  });

  it("a list entry carries no body", async () => {
    writeFileSync(ticketPath(root, "queue", "TASK-0003"), ticket("TASK-0003", "listed"));
    const [found] = (await scanTickets(root)).tickets;
    expect(found?.description).toBe("body of listed\n");
    expect(ticketSummary(found!)).not.toHaveProperty("description");
    expect(ticketSummary(found!)).toMatchObject({ id: "TASK-0003", title: "listed", state: "queue" });
  });
});
