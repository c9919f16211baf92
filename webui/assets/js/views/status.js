// How a model's status is shown, the same in the picker and the model manager.

import { h } from "../dom.js";
import { percent } from "../format.js";
import { models, status } from "../models.js";

/** A short label and a CSS tone for a model entry. */
export function describe(entry) {
  const value = status(entry);
  if (value === "loading") {
    const progress = models.loading.get(entry.id);
    return { label: progress ? `loading ${percent(progress)}` : "loading", tone: "busy" };
  }
  if (value === "loaded") return { label: "loaded", tone: "ok" };
  if (value === "sleeping") return { label: "sleeping", tone: "idle" };
  if (value === "downloading") return { label: "downloading", tone: "busy" };
  if (entry?.status?.failed) return { label: "failed", tone: "bad" };
  return { label: "not loaded", tone: "off" };
}

export function statusBadge(entry) {
  const { label, tone } = describe(entry);
  return h("span", { class: `badge badge-${tone}`, dataset: { status: status(entry) } },
    h("span", { class: "dot", "aria-hidden": "true" }), label);
}

/** A determinate (0..1) or indeterminate (null) progress bar. */
export function progressBar(fraction, label) {
  const known = typeof fraction === "number" && Number.isFinite(fraction);
  const value = known ? Math.round(Math.min(1, Math.max(0, fraction)) * 100) : null;
  const bar = h("div", { class: "progress-fill" });
  if (known) bar.style.width = `${value}%`;
  return h("div", {
    class: known ? "progress" : "progress progress-indeterminate",
    role: "progressbar",
    "aria-label": label,
    "aria-valuemin": 0,
    "aria-valuemax": 100,
    "aria-valuenow": known ? value : null,
  }, bar);
}

/** The failure reason of a model that did not load or crashed, if any. */
export function failureOf(entry) {
  if (!entry?.status?.failed) return null;
  const code = entry.status.exit_code ? ` (exit code ${entry.status.exit_code})` : "";
  return `${entry.status.error || "The model stopped unexpectedly"}${code}`;
}

/** Move an existing progress bar (from progressBar) to `fraction` (0..1, or null: unknown). */
export function setProgress(bar, fraction) {
  const known = typeof fraction === "number" && Number.isFinite(fraction);
  const value = known ? Math.round(Math.min(1, Math.max(0, fraction)) * 100) : null;
  bar.classList.toggle("progress-indeterminate", !known);
  bar.firstChild.style.width = known ? `${value}%` : "";
  if (known) bar.setAttribute("aria-valuenow", String(value));
  else bar.removeAttribute("aria-valuenow");
}
