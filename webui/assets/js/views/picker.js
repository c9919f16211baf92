// The model picker in the chat header: every catalogue model with its live status. Choosing a
// model that is not running loads it right away, so its progress shows before the first
// message is sent.

import { h, icon, KeyedList, replace } from "../dom.js";
import { models, status } from "../models.js";
import { describe, failureOf, progressBar, statusBadge } from "./status.js";

export class ModelPicker {
  /** `current()` gives the chosen model id; `onSelect(id)` is called with a new choice. */
  constructor({ current, onSelect }) {
    this.current = current;
    this.onSelect = onSelect;
    this.open = false;
    this.filter = "";
    this.button = h("button", {
      type: "button", class: "picker-button", "aria-haspopup": "listbox", "aria-expanded": "false",
      onClick: () => this.toggle(),
      onKeydown: (event) => {
        if (event.key === "ArrowDown") {
          event.preventDefault();
          this.show();
        }
      },
    });
    this.search = h("input", {
      class: "input picker-search", type: "search", placeholder: "Filter models",
      "aria-label": "Filter models",
      onInput: () => { this.filter = this.search.value; this.renderList(); },
      onKeydown: (event) => this.onListKey(event),
    });
    this.list = h("div", { class: "picker-list", role: "listbox", "aria-label": "Models",
      onKeydown: (event) => this.onListKey(event) });
    this.options = new KeyedList(this.list);
    this.popover = h("div", { class: "picker-popover", hidden: true }, this.search, this.list);
    this.el = h("div", { class: "picker" }, this.button, this.popover);
    this.onOutside = (event) => {
      if (!this.el.contains(event.target)) this.hide();
    };
    this.onChange = () => this.update();
    models.addEventListener("change", this.onChange);
    this.update();
  }

  destroy() {
    models.removeEventListener("change", this.onChange);
    document.removeEventListener("pointerdown", this.onOutside);
  }

  toggle() {
    if (this.open) this.hide();
    else this.show();
  }

  show() {
    this.open = true;
    this.popover.hidden = false;
    this.button.setAttribute("aria-expanded", "true");
    this.search.value = this.filter = "";
    this.renderList();
    document.addEventListener("pointerdown", this.onOutside);
    const selected = this.list.querySelector("[aria-selected=true]") ?? this.list.firstChild;
    (models.models().length > 6 ? this.search : selected)?.focus();
  }

  hide({ focusButton = false } = {}) {
    if (!this.open) return;
    this.open = false;
    this.popover.hidden = true;
    this.button.setAttribute("aria-expanded", "false");
    document.removeEventListener("pointerdown", this.onOutside);
    if (focusButton) this.button.focus();
  }

  onListKey(event) {
    const options = [...this.list.querySelectorAll("[role=option]")];
    const index = options.indexOf(document.activeElement);
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation(); // Esc closes the picker; it must not also stop a generation
      this.hide({ focusButton: true });
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      const next = index < 0 ? (step > 0 ? 0 : options.length - 1) : index + step;
      options[Math.max(0, Math.min(options.length - 1, next))]?.focus();
    } else if (event.key === "Enter" && document.activeElement === this.search) {
      event.preventDefault();
      options[0]?.click();
    }
  }

  choose(id) {
    this.hide({ focusButton: true });
    this.onSelect(id);
  }

  update() {
    const id = this.current();
    const entry = id ? models.get(id) : null;
    const loading = entry && status(entry) === "loading";
    let label;
    if (!id) label = h("span", { class: "picker-name muted" }, "Choose a model");
    else label = h("span", { class: "picker-name" }, id);
    replace(this.button,
      entry ? statusBadge(entry) : null,
      label,
      icon("down"),
      loading ? progressBar(models.loading.get(entry.id) ?? null, `Loading ${id}`) : null);
    this.button.title = entry ? `${id}: ${describe(entry).label}` : (id ? `${id} (unavailable)` : "");
    if (this.open) this.renderList();
  }

  renderList() {
    const chosen = this.current();
    const filter = this.filter.trim().toLowerCase();
    const entries = models.models().filter((entry) =>
      !filter || entry.id.toLowerCase().includes(filter)
      || entry.aliases?.some((alias) => alias.toLowerCase().includes(filter)));
    const empty = h("p", { class: "picker-empty" }, models.loaded ? "No models match." : "Loading models…");
    this.options.render(entries.map((entry) => ({
      key: entry.id,
      signature: JSON.stringify([entry.status, entry.aliases, models.loading.get(entry.id),
        entry.id === chosen]),
      build: () => this.option(entry, entry.id === chosen),
    })), empty);
  }

  option(entry, selected) {
    const failure = failureOf(entry);
    const loading = status(entry) === "loading";
    return h("button", {
      type: "button", class: "picker-option", role: "option", "aria-selected": String(selected),
      dataset: { model: entry.id, focusKey: entry.id },
      onClick: () => this.choose(entry.id),
    },
    h("span", { class: "picker-option-main" },
      h("span", { class: "picker-option-name" }, entry.id),
      statusBadge(entry)),
    entry.aliases?.length
      ? h("span", { class: "picker-option-sub" }, `aliases: ${entry.aliases.join(", ")}`) : null,
    loading ? progressBar(models.loading.get(entry.id) ?? null, `Loading ${entry.id}`) : null,
    failure ? h("span", { class: "picker-option-error" }, failure) : null);
  }
}
