// What a reply says about itself: its live status while generated, its notes afterwards
// (stopped, cut short, error) and its numbers (speed, tokens, context use).

import { h, icon } from "../dom.js";
import { formatNumber, percent } from "../format.js";
import { models, status } from "../models.js";
import { progressBar } from "./status.js";

/**
 * The status line under a message. `run`: the conversation's running generation, if any;
 * `live`: the message is being generated (or about to be resumed after a reload).
 * `bannerFailure`: the failure the chat's banner shows for this reply's model, if any.
 */
export function replyStatus(message, run, live, bannerFailure = null) {
  if (live && run?.messageId !== message.id) {
    return h("span", { class: "typing" }, "Reconnecting to the generation…");
  }
  if (live) {
    const entry = models.get(message.model);
    if (run.phase === "sending" && !message.content) {
      if (status(entry) === "loading") {
        return [h("span", {}, `Loading ${message.model}…`),
          progressBar(models.loading.get(message.model) ?? null, `Loading ${message.model}`)];
      }
      return h("span", { class: "typing" }, "Waiting for the model…");
    }
    if (run.phase === "waiting") {
      return h("span", { class: "typing" }, `Waiting for ${message.model} to load…`);
    }
    if (run.phase === "resuming") return h("span", { class: "typing" }, "Reconnecting…");
    if (run.phase === "tools") return h("span", { class: "typing" }, "Running tools…");
    const seconds = (performance.now() - run.startedAt) / 1000;
    const rate = seconds > 0.5 ? ` · ${(run.chunks / seconds).toFixed(1)} tok/s` : "";
    return h("span", { class: "typing" }, `Generating · ${formatNumber(run.chunks)} tokens${rate}`);
  }
  const notes = [];
  if (message.toolNote) notes.push(h("div", { class: "msg-note msg-tool-note" }, message.toolNote));
  if (message.error && bannerFailure && isLoadFailure(message, bannerFailure)) {
    // The banner above the chat already gives the reason (with Retry): said once, not twice.
    notes.push(h("div", { class: "msg-note msg-load-failed" }, icon("alert"),
      h("span", {}, `No reply: ${message.model} did not load (the reason is shown above).`)));
  } else if (message.error) {
    notes.push(h("div", { class: "msg-error", role: "alert" }, icon("alert"),
      h("span", {}, message.error)));
  } else if (message.state === "stopped") {
    notes.push(h("div", { class: "msg-note" }, "Stopped."));
  } else if (message.state === "interrupted") {
    notes.push(h("div", { class: "msg-note" }, "This reply was cut short."));
  }
  return notes;
}

// A reply that failed because its model could not load ("model 'x' failed to load: <reason>").
function isLoadFailure(message, failure) {
  return /failed to load/i.test(message.error) || failure.includes(message.error)
    || message.error.includes(failure);
}

/** The numbers of a finished reply, from the worker's final usage and timings. */
export function replyStats(message) {
  const stats = message.stats;
  const parts = [];
  if (stats.tokensPerSecond) parts.push(`${stats.tokensPerSecond.toFixed(1)} tok/s`);
  parts.push(`${formatNumber(stats.completionTokens)} tokens`);
  if (stats.contextSize) {
    parts.push(`context ${formatNumber(stats.context)}/${formatNumber(stats.contextSize)}`
      + ` (${percent(stats.context / stats.contextSize)})`);
  }
  if (message.finish === "length") parts.push("hit the token limit");
  const detail = [
    `prompt: ${formatNumber(stats.promptTokens)} tokens (${formatNumber(stats.cachedTokens)} cached)`,
    stats.promptPerSecond ? `prompt speed: ${stats.promptPerSecond.toFixed(1)} tok/s` : null,
  ].filter(Boolean).join("\n");
  return h("span", { class: "msg-stats", title: detail }, parts.join(" · "));
}
