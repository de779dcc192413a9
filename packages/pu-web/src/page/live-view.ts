// A view that is re-asked from the daemon whenever something may have changed it: the daemon's
// state.json changed, an agent's status moved, or the person acted. Redraws are throttled so a
// busy daemon costs at most one round of requests per 1.5 s.
import { clear, h } from "./dom.js";
import { store } from "./store.js";
import { onActed, sayError, throttle } from "./ui.js";

export function renderLiveView(view: HTMLElement, title: string, fill: (list: HTMLElement) => Promise<void>): () => void {
  clear(view);
  const list = h("div", {}, h("p", {}, "Loading…"));
  view.append(h("h2", {}, title), list);
  const draw = async () => {
    try {
      await fill(list);
    } catch (error) {
      sayError(error);
    }
  };
  void draw();
  const redraw = throttle(() => void draw(), 1500);
  const offs = [store.onStateChanged(redraw), onActed(redraw), store.onStatus(redraw)];
  return () => offs.forEach((off) => off());
}
