// The tool part of the chat settings, shown when the router has tools (docs/webui.md): whether
// the chat offers them to the model, whether write and exec calls are confirmed first, and
// how many times in a row the model may ask for tools.

import { h } from "../dom.js";
import { DEFAULT_MAX_TOOL_ROUNDS } from "../tools.js";

/** The fields for `settings`; `read()` gives their values or throws a readable error. */
export function toolFields(settings) {
  const offer = h("input", { type: "checkbox", name: "tools", checked: settings.tools !== false });
  const confirm = h("input", {
    type: "checkbox", name: "confirm_tools", checked: settings.confirm_tools !== false,
  });
  const rounds = h("input", {
    class: "input", type: "number", name: "max_tool_rounds", min: 1, step: 1,
    inputMode: "numeric", value: settings.max_tool_rounds ?? "",
    placeholder: `default ${DEFAULT_MAX_TOOL_ROUNDS}`,
  });
  const el = h("fieldset", { class: "settings-tools" },
    h("legend", {}, "Server tools"),
    h("label", { class: "check" }, offer, h("span", {}, "Let the model use the server's tools")),
    h("label", { class: "check" }, confirm,
      h("span", {}, "Ask before running tools that write files or run commands")),
    h("label", { class: "field" }, h("span", {}, "Tool rounds in a row, at most"), rounds));

  function read() {
    const raw = rounds.value.trim();
    const value = raw ? Number(raw) : null;
    if (value !== null && !(Number.isInteger(value) && value >= 1)) {
      throw new Error("Tool rounds must be a whole number, 1 or more.");
    }
    return { tools: offer.checked, confirm_tools: confirm.checked, max_tool_rounds: value };
  }

  return { el, read };
}
