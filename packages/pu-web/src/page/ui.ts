// Small pieces every view uses: one message line for what a request answered, and dialogs
// (a confirmation where data can be lost, a text box for a prompt or a reason).
import { RequestFailed } from "./api.js";
import { h } from "./dom.js";

export function say(text: string, kind: "ok" | "error" = "ok"): void {
  const line = document.getElementById("message");
  if (!line) return;
  line.textContent = text;
  line.className = kind;
  line.setAttribute("data-kind", kind);
}

export function sayError(error: unknown): void {
  say(error instanceof RequestFailed ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error), "error");
}

const actedListeners = new Set<() => void>();

/** Called after any action a person took from the page succeeded (views that show its effect re-ask). */
export function onActed(listener: () => void): () => void {
  actedListeners.add(listener);
  return () => actedListeners.delete(listener);
}

/** Runs a request from a button: the button is disabled meanwhile, failures go to the message line. */
/** Like `act` for what only reads (a diff, a design, evidence): the view is not redrawn after it. */
export async function look(button: HTMLButtonElement | null, work: () => Promise<void>): Promise<void> {
  if (button) button.disabled = true;
  try {
    await work();
  } catch (error) {
    sayError(error);
  } finally {
    if (button) button.disabled = false;
  }
}

export async function act(button: HTMLButtonElement | null, work: () => Promise<string | void>): Promise<void> {
  if (button) button.disabled = true;
  try {
    const done = await work();
    if (done) say(done);
    for (const listener of actedListeners) listener();
  } catch (error) {
    sayError(error);
  } finally {
    if (button) button.disabled = false;
  }
}

interface DialogField {
  name: string;
  label: string;
  multiline?: boolean;
  required?: boolean;
  value?: string;
}

/**
 * A modal with a question, optional text fields and two buttons; resolves with the fields'
 * values, or undefined when the person cancels.
 */
export function dialog(title: string, detail: string, confirmLabel: string, fields: DialogField[] = [], danger = false): Promise<Record<string, string> | undefined> {
  return new Promise((resolve) => {
    const inputs = fields.map((field) =>
      field.multiline
        ? h("textarea", { name: field.name, rows: 4, required: field.required ?? false, "aria-label": field.label })
        : h("input", { name: field.name, type: "text", required: field.required ?? false, "aria-label": field.label }),
    );
    inputs.forEach((input, i) => (input.value = fields[i]?.value ?? ""));
    const form = h(
      "form",
      { method: "dialog" },
      h("h3", {}, title),
      detail ? h("p", {}, detail) : null,
      ...inputs.map((input, i) => h("label", {}, fields[i]!.label, input)),
      h(
        "div",
        { className: "dialog-buttons" },
        h("button", { type: "button", value: "cancel", "data-action": "cancel" }, "Cancel"),
        h("button", { type: "submit", value: "ok", className: danger ? "danger" : "primary", "data-action": "confirm" }, confirmLabel),
      ),
    );
    const box = h("dialog", { className: "pu-dialog" }, form);
    const finish = (result: Record<string, string> | undefined) => {
      box.close();
      box.remove();
      resolve(result);
    };
    form.querySelector('[data-action="cancel"]')!.addEventListener("click", () => finish(undefined));
    box.addEventListener("cancel", () => finish(undefined));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      finish(Object.fromEntries(fields.map((field, i) => [field.name, inputs[i]!.value])));
    });
    document.body.appendChild(box);
    box.showModal();
    (inputs[0] ?? form.querySelector<HTMLButtonElement>('[data-action="confirm"]'))?.focus();
  });
}

export function button(label: string, onClick: (button: HTMLButtonElement) => void, attrs: Record<string, string> = {}): HTMLButtonElement {
  const el = h("button", { type: "button", ...attrs }, label);
  el.addEventListener("click", () => onClick(el));
  return el;
}

/** `fn` at most once per `ms` (the last call within a window runs at its end). */
export function throttle(fn: () => void, ms: number): () => void {
  let timer: number | undefined;
  let last = 0;
  return () => {
    if (timer !== undefined) return;
    const wait = Math.max(0, last + ms - Date.now());
    timer = window.setTimeout(() => {
      timer = undefined;
      last = Date.now();
      fn();
    }, wait);
  };
}
