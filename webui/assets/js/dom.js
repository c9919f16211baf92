// Small DOM helpers. Every element is built with createElement and text nodes, so nothing a
// model or the server sends is ever parsed as HTML here; markdown.js is the one place where
// HTML is produced, and it is sanitised there.

/**
 * Create an element. `props`: "class", "dataset" (object), "style" (object), "on<event>"
 * (listener), properties the element has (value, disabled, hidden, …), anything else as an
 * attribute (aria-*, role, …). Children: nodes, strings, arrays, null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style") Object.assign(el.style, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key in el && !key.includes("-")) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replace all children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Icons: 24×24 stroked paths, drawn with createElementNS (no markup strings).
const ICONS = {
  plus: ["M12 5v14", "M5 12h14"],
  menu: ["M4 6h16", "M4 12h16", "M4 18h16"],
  sliders: ["M4 6h10", "M18 6h2", "M4 18h4", "M12 18h8", "M4 12h2", "M10 12h10",
    "M14 4v4", "M8 16v4", "M6 10v4"],
  trash: ["M4 7h16", "M10 11v6", "M14 11v6", "M6 7l1 13h10l1-13", "M9 7V4h6v3"],
  copy: ["M9 9h11v11H9z", "M5 15H4V4h11v1"],
  check: ["M5 12l5 5L20 7"],
  edit: ["M4 20h4L19 9l-4-4L4 16v4z", "M13 7l4 4"],
  refresh: ["M20 11a8 8 0 1 0-2.3 5.7", "M20 4v7h-7"],
  left: ["M15 6l-6 6 6 6"],
  right: ["M9 6l6 6-6 6"],
  down: ["M6 9l6 6 6-6"],
  stop: ["M7 7h10v10H7z"],
  send: ["M12 19V5", "M6 11l6-6 6 6"],
  sun: ["M12 8a4 4 0 1 0 0 8a4 4 0 1 0 0-8z", "M12 2v2", "M12 20v2", "M4.9 4.9l1.4 1.4",
    "M17.7 17.7l1.4 1.4", "M2 12h2", "M20 12h2", "M4.9 19.1l1.4-1.4", "M17.7 6.3l1.4-1.4"],
  moon: ["M20 14.5A8 8 0 0 1 9.5 4a8 8 0 1 0 10.5 10.5z"],
  monitor: ["M3 4h18v12H3z", "M8 20h8", "M12 16v4"],
  key: ["M8 11a4 4 0 1 0 0 8a4 4 0 1 0 0-8z", "M11 12l9-9", "M16 7l3 3", "M14 9l2 2"],
  boxes: ["M3 7l9-4 9 4-9 4-9-4z", "M3 7v10l9 4 9-4V7", "M12 11v10"],
  x: ["M6 6l12 12", "M18 6L6 18"],
  download: ["M12 4v11", "M7 10l5 5 5-5", "M5 20h14"],
  play: ["M8 5l11 7-11 7z"],
  power: ["M12 3v9", "M6.3 6.3a8 8 0 1 0 11.4 0"],
  chat: ["M4 5h16v11H9l-5 4z"],
  pin: ["M9 4h6l-1 6 3 3H7l3-3z", "M12 13v8"],
  clock: ["M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18z", "M12 7v5l3 2"],
  alert: ["M12 3l10 18H2z", "M12 10v5", "M12 18h.01"],
  paperclip: ["M20 11.5l-8 8a5 5 0 0 1-7-7l8.5-8.5a3.3 3.3 0 0 1 4.7 4.7L9.7 17.2a1.7 1.7 0 0 1-2.4-2.4L15 7"],
};

export function icon(name, label) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon icon-${name}`);
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  for (const d of ICONS[name] ?? []) {
    const path = document.createElementNS(NS, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

/** An icon-only button; the label becomes its accessible name and tooltip. */
export function iconButton(name, label, onClick, props = {}) {
  return h("button", { type: "button", class: "icon-btn", title: label,
    "aria-label": label, onClick, ...props }, icon(name));
}

/** Copy text, also where the async clipboard API is missing (plain http on a LAN address). */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = h("textarea", { value: text, readOnly: true, class: "offscreen" });
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

/** Briefly swap a button's icon for a check mark after a successful copy. */
export function flashCopied(button) {
  const old = [...button.childNodes];
  button.replaceChildren(icon("check"));
  button.classList.add("done");
  setTimeout(() => {
    button.replaceChildren(...old);
    button.classList.remove("done");
  }, 1200);
}

/**
 * A list of keyed elements that are rebuilt only when their signature changes, and otherwise
 * left in place (optionally patched by `update`). Lists that refresh several times a second
 * (download progress, model statuses) must not recreate their buttons: a click whose press
 * and release land on different elements is lost, and so is keyboard focus. Focus on an
 * element with `data-focus-key` is moved to its rebuilt twin.
 *
 * items: [{ key, signature, build: () => Element, update?: (el) => void }]
 */
export class KeyedList {
  constructor(container) {
    this.container = container;
    this.known = new Map(); // key -> { signature, el }
  }

  render(items, empty = null) {
    const active = document.activeElement;
    const focusKey = this.container.contains(active) ? active?.dataset?.focusKey : null;
    const next = new Map();
    const nodes = items.map((item) => {
      let entry = this.known.get(item.key);
      if (!entry || entry.signature !== item.signature) {
        entry = { signature: item.signature, el: item.build() };
      }
      item.update?.(entry.el);
      next.set(item.key, entry);
      return entry.el;
    });
    this.known = next;
    if (!nodes.length && empty) nodes.push(empty);
    let index = 0;
    for (const node of nodes) {
      const current = this.container.childNodes[index];
      if (current !== node) this.container.insertBefore(node, current ?? null);
      index += 1;
    }
    while (this.container.childNodes.length > nodes.length) this.container.lastChild.remove();
    if (focusKey && !this.container.contains(active)) {
      this.container.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`)?.focus();
    }
  }
}
