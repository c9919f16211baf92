// Modal dialogs built on <dialog>: the browser gives focus trapping, Esc to cancel and the
// backdrop. Each function resolves when the dialog closes.

import { apiKey, setApiKey } from "../api.js";
import { h } from "../dom.js";
import { argumentsText } from "../tools.js";

function modal(content, { className = "", label } = {}) {
  const dialog = h("dialog", { class: `dialog ${className}`, "aria-label": label }, content);
  document.body.append(dialog);
  dialog.addEventListener("close", () => dialog.remove(), { once: true });
  dialog.showModal();
  return dialog;
}

/** Ask yes/no; resolves true for the confirming button. */
export function confirmDialog({ title, message, confirm = "OK", danger = false }) {
  return new Promise((resolve) => {
    let answer = false;
    const ok = h("button", {
      type: "button", class: danger ? "btn btn-danger" : "btn btn-primary",
      onClick: () => { answer = true; dialog.close(); },
    }, confirm);
    const cancel = h("button", { type: "button", class: "btn", onClick: () => dialog.close() },
      "Cancel");
    const dialog = modal([
      h("h2", { class: "dialog-title" }, title),
      h("p", { class: "dialog-text" }, message),
      h("div", { class: "dialog-actions" }, cancel, ok),
    ], { label: title, className: "dialog-confirm" });
    dialog.addEventListener("close", () => resolve(answer), { once: true });
    // A destructive action is never one Enter away.
    (danger ? cancel : ok).focus();
  });
}

/** Ask before a tool call that writes or runs commands; resolves true to run it. */
export function toolCallDialog(call) {
  return new Promise((resolve) => {
    let answer = false;
    const title = `Run ${call.name}?`;
    const run = h("button", {
      type: "button", class: "btn btn-danger", onClick: () => { answer = true; dialog.close(); },
    }, "Run");
    const skip = h("button", { type: "button", class: "btn", onClick: () => dialog.close() },
      "Don't run");
    const dialog = modal([
      h("h2", { class: "dialog-title" }, title),
      h("p", { class: "dialog-text" }, `The model asks to run ${call.name} on the server, which `
        + "can change files or run commands there. Its arguments:"),
      h("pre", { class: "dialog-text tool-args" }, argumentsText(call)),
      h("div", { class: "dialog-actions" }, skip, run),
    ], { label: title, className: "dialog-confirm dialog-tool" });
    dialog.addEventListener("close", () => resolve(answer), { once: true });
    skip.focus(); // never one Enter away
  });
}

/** Ask for one line of text; resolves to it, or null when cancelled. */
export function promptDialog({ title, label, value = "", confirm = "Save" }) {
  return new Promise((resolve) => {
    let answer = null;
    const input = h("input", { class: "input", value, "aria-label": label });
    const form = h("form", {
      method: "dialog",
      onSubmit: (event) => { event.preventDefault(); answer = input.value; dialog.close(); },
    },
    h("h2", { class: "dialog-title" }, title),
    h("label", { class: "field" }, h("span", {}, label), input),
    h("div", { class: "dialog-actions" },
      h("button", { type: "button", class: "btn", onClick: () => dialog.close() }, "Cancel"),
      h("button", { type: "submit", class: "btn btn-primary" }, confirm)));
    const dialog = modal(form, { label: title });
    dialog.addEventListener("close", () => resolve(answer), { once: true });
    input.select();
  });
}

/**
 * Ask for the router's API key (kept in this browser's localStorage, sent as a Bearer token).
 * `rejected`: a key was sent and refused. Resolves to the key, or null when cancelled.
 */
export function apiKeyDialog({ rejected = false, optional = false } = {}) {
  return new Promise((resolve) => {
    let answer = null;
    const input = h("input", {
      class: "input", type: "password", autocomplete: "off", spellcheck: false,
      value: optional ? apiKey() : "", placeholder: "API key", "aria-label": "API key",
    });
    const text = optional
      ? "The key is kept in this browser and sent with every request. Leave it empty to forget it."
      // Neutral on purpose: the page cannot tell which flag the server was started with, and a
      // caller without a key learns nothing of its setup (docs/security.md: only /health).
      : ["This server needs an API key: the key from its ", h("code", {}, "--api-key"), " or ",
        h("code", {}, "--api-key-file"), ". It is kept in this browser and sent with every request."];
    const form = h("form", {
      method: "dialog",
      onSubmit: (event) => {
        event.preventDefault();
        const key = input.value.trim();
        if (!key && !optional) {
          input.focus();
          return;
        }
        setApiKey(key);
        answer = key;
        dialog.close();
      },
    },
    h("h2", { class: "dialog-title" }, optional ? "API key" : "API key needed"),
    h("p", { class: "dialog-text" }, text),
    rejected ? h("p", { class: "dialog-error", role: "alert" }, "That key was not accepted.") : null,
    input,
    h("div", { class: "dialog-actions" },
      h("button", { type: "button", class: "btn", onClick: () => dialog.close() }, "Cancel"),
      h("button", { type: "submit", class: "btn btn-primary" }, "Save key")));
    const dialog = modal(form, { label: "API key", className: "dialog-key" });
    dialog.addEventListener("close", () => resolve(answer), { once: true });
    input.focus();
  });
}
