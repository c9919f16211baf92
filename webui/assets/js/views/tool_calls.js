// A reply's tool calls in the thread: one collapsed <details> per call, its summary the tool's
// name and what became of the call, its body the arguments and the result (docs/webui.md).

import { h } from "../dom.js";
import { argumentsText } from "../tools.js";

const STATE_TEXT = {
  pending: "waiting",
  confirming: "waiting for your confirmation",
  running: "running…",
  done: "done",
  error: "failed",
  declined: "declined, not run",
  "not-run": "not run",
};

function callEl(call, open) {
  return h("details", { class: `tool-call tool-${call.state}`, open, dataset: { tool: call.name } },
    h("summary", {},
      h("span", { class: "tool-name" }, call.name || "tool"),
      h("span", { class: "tool-state" }, STATE_TEXT[call.state] ?? call.state)),
    h("div", { class: "tool-label" }, "Arguments"),
    h("pre", { class: "tool-args" }, argumentsText(call)),
    call.result === null || call.result === undefined ? null : [
      h("div", { class: "tool-label" }, "Result"),
      h("pre", { class: "tool-result" }, call.result),
    ]);
}

/** Redraw the calls of `message` into `container`, keeping the ones the user opened open. */
export function fillToolCalls(container, message) {
  const calls = message.toolCalls ?? [];
  const opened = [...container.children].map((el) => el.open);
  container.hidden = !calls.length;
  container.replaceChildren(...calls.map((call, index) => callEl(call, Boolean(opened[index]))));
}

/** What changes a reply's tool calls on screen: redrawn only when this does. */
export function toolCallsKey(message) {
  return (message.toolCalls ?? []).map((call) =>
    `${call.name}:${call.arguments.length}:${call.state}:${call.result?.length ?? -1}`).join("|");
}
