// The queue board: tickets by state (queue / in progress / awaiting review / done) with their
// step, a form to create one, approve or reject a review (with a note or a reason), and pause /
// resume for the whole queue. Re-asked whenever the daemon's state.json changes.
import type { QueueStatus, ReviewItem, TicketSummary } from "@pu/ipc/protocol";
import { call } from "./api.js";
import { clear, h } from "./dom.js";
import { store } from "./store.js";
import { act, button, dialog, onActed, sayError } from "./ui.js";

interface Board {
  queue: QueueStatus;
  reviews: ReviewItem[];
  tickets: { project: string; ticket: TicketSummary }[];
}

async function loadBoard(): Promise<Board> {
  const [queue, reviews, lists] = await Promise.all([
    call("queue_status", {}),
    call("review_list", {}),
    Promise.all(store.roots().map(async (root) => ({ root, list: await call("ticket_list", { projectRoot: root }) }))),
  ]);
  return { queue, reviews: reviews.reviews, tickets: lists.flatMap(({ root, list }) => list.tickets.map((ticket) => ({ project: root, ticket }))) };
}

function ticketCard(project: string, ticket: TicketSummary, step: string | null, extra?: HTMLElement, host?: string | null): HTMLElement {
  return h(
    "div",
    { className: "card", "data-ticket-id": ticket.id },
    h("strong", {}, ticket.id),
    " ",
    h("span", { className: "priority" }, ticket.priority),
    h("div", { className: "card-title" }, ticket.title),
    h("small", {}, `${ticket.type}${step ? ` · step ${step}` : ""}${host ? ` · on ${host}` : ""} · ${project.split("/").pop() ?? project}`),
    extra ?? null,
  );
}

function reviewButtons(review: ReviewItem): HTMLElement {
  return h(
    "div",
    { className: "card-actions" },
    button(
      "Approve",
      (b) =>
        void dialog(`Approve ${review.ticketId}?`, review.lastMessage ?? "", "Approve", [{ name: "note", label: "Note (optional)" }]).then(
          (values) =>
            values &&
            act(b, async () => {
              await call("review_approve", { projectRoot: review.project, ticketId: review.ticketId, ...(values.note ? { note: values.note } : {}) });
              return `approved ${review.ticketId}`;
            }),
        ),
      { className: "primary", "data-action": "approve" },
    ),
    button(
      "Reject",
      (b) =>
        void dialog(`Reject ${review.ticketId}?`, "The reason goes back to the agent.", "Reject", [{ name: "reason", label: "Reason", multiline: true, required: true }], true).then(
          (values) =>
            values &&
            act(b, async () => {
              await call("review_reject", { projectRoot: review.project, ticketId: review.ticketId, reason: values.reason });
              return `rejected ${review.ticketId}`;
            }),
        ),
      { className: "danger", "data-action": "reject" },
    ),
  );
}

function createForm(): HTMLElement {
  const project = h("select", { name: "project", "aria-label": "Project" }, ...store.roots().map((root) => h("option", { value: root }, root)));
  const title = h("input", { name: "title", type: "text", required: true, maxlength: 200, placeholder: "Title", "aria-label": "Title" });
  const type = h("input", { name: "type", type: "text", required: true, value: "FEAT", maxlength: 16, "aria-label": "Ticket type" });
  const priority = h("select", { name: "priority", "aria-label": "Priority" }, ...["P2", "P0", "P1", "P3"].map((p) => h("option", { value: p }, p)));
  const description = h("textarea", { name: "description", rows: 2, placeholder: "Description", "aria-label": "Description" });
  const submit = h("button", { type: "submit", className: "primary", "data-action": "create-ticket" }, "Create ticket");
  const form = h("form", { className: "ticket-form" }, project, type, priority, title, description, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void act(submit, async () => {
      const result = await call("ticket_create", {
        projectRoot: project.value,
        title: title.value,
        ticketType: type.value,
        priority: priority.value,
        ...(description.value ? { description: description.value } : {}),
      });
      title.value = "";
      description.value = "";
      return `created ${result.ticket.id}`;
    });
  });
  return h("details", { className: "spawn" }, h("summary", {}, "New ticket"), form);
}

export function renderQueue(view: HTMLElement): () => void {
  clear(view);
  const head = h("div", { className: "queue-head" });
  const board = h("div", { className: "board" });
  view.append(h("h2", {}, "Queue"), head, createForm(), board);
  let loading = false;
  let again = false;
  const draw = async () => {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const data = await loadBoard();
      clear(head);
      const q = data.queue;
      head.append(
        h("span", { "data-queue-paused": String(q.paused) }, q.paused ? "Paused" : "Running", ` · ${q.slotsUsed}/${q.maxParallel} slots`),
        button(q.paused ? "Resume the queue" : "Pause the queue", (b) => void act(b, async () => {
      await call(q.paused ? "queue_resume" : "queue_pause", {});
      return (q.paused ? "queue resumed" : "queue paused");
    }), {
          "data-action": q.paused ? "queue-resume" : "queue-pause",
        }),
        ...[q.stateError, q.configError, ...q.problems.map((p) => `${p.file}: ${p.message}`)].filter((x): x is string => !!x).map((text) => h("p", { className: "error" }, text)),
      );
      const inReview = new Map(data.reviews.map((r) => [r.ticketId, r]));
      const running = new Map(q.running.map((a) => [a.ticket_id, a]));
      const column = (name: string, key: string, cards: HTMLElement[]) => h("section", { className: "column", "data-column": key }, h("h3", {}, `${name} (${cards.length})`), ...cards);
      const byState = (state: string) => data.tickets.filter((t) => t.ticket.state === state);
      board.replaceChildren(
        column("Queue", "queue", byState("queue").map((t) => ticketCard(t.project, t.ticket, null))),
        column(
          "In progress",
          "in-progress",
          byState("in-progress")
            .filter((t) => !inReview.has(t.ticket.id))
            .map((t) => ticketCard(t.project, t.ticket, running.get(t.ticket.id)?.current_step ?? null, undefined, running.get(t.ticket.id)?.host)),
        ),
        column(
          "Awaiting review",
          "review",
          data.reviews.map((r) => {
            const found = data.tickets.find((t) => t.ticket.id === r.ticketId);
            const summary = found?.ticket ?? ({ id: r.ticketId, title: r.lastMessage ?? "", type: "", priority: "P2" } as unknown as TicketSummary);
            return ticketCard(r.project, summary, r.step, reviewButtons(r));
          }),
        ),
        column("Done", "done", byState("done").map((t) => ticketCard(t.project, t.ticket, null))),
      );
    } catch (error) {
      sayError(error);
    } finally {
      loading = false;
      if (again) {
        again = false;
        void draw();
      }
    }
  };
  void draw();
  const offState = store.onStateChanged(() => void draw());
  const offActed = onActed(() => void draw());
  return () => {
    offState();
    offActed();
  };
}
