// The conversation settings dialog: system prompt and sampling. An empty field means "the
// server's default" and is left out of the request.

import { h } from "../dom.js";
import { parseExtra } from "../generation.js";
import { DEFAULT_MAX_TOKENS, saveDefaultSettings } from "../conversations.js";
import { toolFields } from "./tool_settings.js";

// The hints are the server's defaults (llama-server's), used when a field is left empty.
const NUMBER_FIELDS = [
  { key: "temperature", label: "Temperature", min: 0, max: 5, step: 0.05, hint: "default 0.8" },
  { key: "top_p", label: "Top P", min: 0, max: 1, step: 0.01, hint: "default 0.95" },
  { key: "max_tokens", label: "Max tokens", min: -1, step: 1, hint: "no limit", integer: true },
];

/**
 * Edit `settings`; resolves to the new settings, or null when cancelled. `tools`: the router
 * has tools, so their settings are shown.
 */
export function settingsDialog(settings, { title = "Chat settings", tools = false } = {}) {
  return new Promise((resolve) => {
    let answer = null;
    const system = h("textarea", {
      class: "input", rows: 4, value: settings.system ?? "", name: "system",
      placeholder: "You are a helpful assistant.",
    });
    const numbers = Object.fromEntries(NUMBER_FIELDS.map((field) => [field.key, h("input", {
      class: "input", type: "number", name: field.key, min: field.min, max: field.max,
      step: field.step, inputMode: field.integer ? "numeric" : "decimal",
      value: settings[field.key] ?? "", placeholder: field.hint,
    })]));
    const extra = h("textarea", {
      class: "input mono", rows: 3, value: settings.extra ?? "", name: "extra",
      placeholder: "{\"top_k\": 40, \"seed\": 1}", spellcheck: false,
    });
    const asDefault = h("input", { type: "checkbox", name: "default" });
    const error = h("p", { class: "dialog-error", role: "alert", hidden: true });
    const toolPart = tools ? toolFields(settings) : null;

    function read() {
      const next = { ...settings, system: system.value, extra: extra.value.trim(),
        ...toolPart?.read() };
      for (const field of NUMBER_FIELDS) {
        const raw = numbers[field.key].value.trim();
        if (!raw) {
          next[field.key] = null;
          continue;
        }
        const value = Number(raw);
        if (!Number.isFinite(value) || (field.integer && !Number.isInteger(value))) {
          throw new Error(`${field.label} must be ${field.integer ? "a whole number" : "a number"}.`);
        }
        next[field.key] = value;
      }
      try {
        parseExtra(next.extra);
      } catch (problem) {
        throw new Error(`Extra parameters: ${problem.message}`);
      }
      return next;
    }

    const form = h("form", {
      method: "dialog",
      class: "settings-form",
      onSubmit: (event) => {
        event.preventDefault();
        try {
          answer = read();
        } catch (problem) {
          error.textContent = problem.message;
          error.hidden = false;
          return;
        }
        if (asDefault.checked) saveDefaultSettings(answer);
        dialog.close();
      },
    },
    h("h2", { class: "dialog-title" }, title),
    h("label", { class: "field" }, h("span", {}, "System prompt"), system),
    h("div", { class: "field-row" }, NUMBER_FIELDS.map((field) =>
      h("label", { class: "field" }, h("span", {}, field.label), numbers[field.key]))),
    h("p", { class: "field-hint" }, "Empty fields use the server's defaults (max tokens: no limit). "
      + `New chats stop replies at ${DEFAULT_MAX_TOKENS} tokens unless you change it here.`),
    h("label", { class: "field" },
      h("span", {}, "Extra parameters (JSON, sent with each request)"), extra),
    toolPart?.el,
    h("label", { class: "check" }, asDefault, h("span", {}, "Use these settings for new chats")),
    error,
    h("div", { class: "dialog-actions" },
      h("button", { type: "button", class: "btn", onClick: () => dialog.close() }, "Cancel"),
      h("button", { type: "submit", class: "btn btn-primary" }, "Save")));

    const dialog = h("dialog", { class: "dialog dialog-settings", "aria-label": title }, form);
    document.body.append(dialog);
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(answer);
    }, { once: true });
    dialog.showModal();
    system.focus();
  });
}
