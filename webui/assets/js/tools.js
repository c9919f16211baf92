// The router's server-side tools (docs/tools.md) in a chat: which are offered to the model,
// the calls a reply asks for (streamed as `tool_calls` deltas), running them with POST /tools
// and giving their results back as `tool` messages.
//
// A reply that asks for tools keeps its calls on the message:
//   message.toolCalls = [{ id, name, arguments, state, result }]
//   state: "pending" | "confirming" | "running" | "done" | "error" | "declined" | "not-run"
// and the reply that continues after them is its child, so a loop is a chain of assistant
// messages under one user message. The model is asked again only while every call ran (a
// declined call ends the loop: the user says what to do instead) and at most
// `max_tool_rounds` times in a row.

import { api, apiJson, errorOf } from "./api.js";
import { models } from "./models.js";

export const DEFAULT_MAX_TOOL_ROUNDS = 10;
export const DENIED = "Tool execution was denied by the user."; // llama.cpp's UI says the same
const NOT_RUN = "Not run: the chat stopped asking the model for tools.";

// GET /tools once per page, unless /v1/key says the router's tools are off: [] then, and when
// the router refuses (403) or is unreachable.
let listing = null;

/** The router's tools, as GET /tools lists them. */
export function serverTools() {
  listing ??= models.accessKnown
    .then((access) => (access?.tools === false ? [] : apiJson("./tools")))
    .catch((error) => {
      if (error?.status !== 403) listing = null; // asked again next time
      return [];
    });
  return listing;
}

/**
 * The tools offered to `model` in a chat with `settings`: none when the chat turned them off,
 * else the router's, narrowed to the model's preset `tools` when it has one (docs/tools.md).
 */
export async function offeredTools(settings, model) {
  if (settings?.tools === false) return [];
  const all = await serverTools();
  const allowed = models.get(model)?.tools;
  return Array.isArray(allowed) ? all.filter((tool) => allowed.includes(tool.tool)) : all;
}

/** Add one streamed chunk's `delta.tool_calls` to the reply's calls. */
export function addToolCallDeltas(message, pieces) {
  const calls = (message.toolCalls ??= []);
  for (const piece of pieces) {
    const index = piece.index ?? calls.length;
    const call = (calls[index] ??= { id: "", name: "", arguments: "", state: "pending", result: null });
    if (piece.id) call.id = piece.id;
    if (piece.function?.name) call.name += piece.function.name;
    if (piece.function?.arguments) call.arguments += piece.function.arguments;
  }
}

/** A call's arguments for people: indented when they are JSON, else as the model wrote them. */
export function argumentsText(call) {
  try {
    return JSON.stringify(JSON.parse(call.arguments || "{}"), null, 2);
  } catch {
    return call.arguments;
  }
}

/** What a reply with tool calls says in a request: the call, then each result as a `tool` message. */
export function toolTurn(message) {
  const calls = message.toolCalls.map((call) => ({
    id: call.id, type: "function", function: { name: call.name, arguments: call.arguments || "{}" },
  }));
  return [
    { role: "assistant", content: message.content || null, tool_calls: calls },
    ...message.toolCalls.map((call) => ({
      role: "tool", tool_call_id: call.id, content: call.result ?? NOT_RUN,
    })),
  ];
}

// The page registers how a write or exec call is confirmed (views/dialogs.js, via main.js).
let confirmCall = null;

export function onToolConfirm(ask) {
  confirmCall = ask;
}

// How many replies in a row, ending with `message`, asked for tools.
function roundsUpTo(conversation, message) {
  let rounds = 0;
  for (let item = message; item?.role === "assistant" && item.toolCalls?.length;
    item = conversation.messages[item.parent]) rounds += 1;
  return rounds;
}

function stopWith(message, note) {
  for (const call of message.toolCalls) {
    if (call.state === "pending") {
      call.state = "not-run";
      call.result = NOT_RUN;
    }
  }
  message.toolNote = note;
}

async function runCall(call, signal) {
  let params;
  try {
    params = JSON.parse(call.arguments || "{}");
  } catch {
    return ["error", `The arguments are not valid JSON: ${call.arguments}`];
  }
  try {
    const response = await api("./tools", { method: "POST", json: { tool: call.name, params }, signal });
    if (!response.ok) return ["error", `Error: ${(await errorOf(response)).message}`];
    const answer = await response.json();
    if (typeof answer?.error === "string") return ["error", `Error: ${answer.error}`];
    if (typeof answer?.plain_text_response === "string") return ["done", answer.plain_text_response];
    return ["done", JSON.stringify(answer)];
  } catch (error) {
    if (signal.aborted) return ["error", "Stopped: its answer was not waited for."];
    return ["error", `Error: ${error.message}`];
  }
}

/**
 * Run the calls `message` asks for, in order; `changed()` redraws. Resolves to true when the
 * model should be asked again with the results, false when the loop ends here.
 */
export async function runToolCalls(conversation, message, signal, changed) {
  const settings = conversation.settings ?? {};
  const limit = settings.max_tool_rounds ?? DEFAULT_MAX_TOOL_ROUNDS;
  if (roundsUpTo(conversation, message) > limit) {
    stopWith(message, `Stopped at the limit of ${limit} tool round${limit === 1 ? "" : "s"} in a row.`);
    return false;
  }
  const writing = new Set((await serverTools()).filter((tool) => tool.permissions?.write)
    .map((tool) => tool.tool));
  for (const call of message.toolCalls) {
    if (signal.aborted) {
      stopWith(message, "Stopped.");
      return false;
    }
    if (writing.has(call.name) && settings.confirm_tools !== false) {
      call.state = "confirming";
      changed();
      if (!(await confirmCall?.(call))) {
        call.state = "declined";
        call.result = DENIED;
        stopWith(message, "A tool call was declined: tell the model what to do instead.");
        changed();
        return false;
      }
    }
    call.state = "running";
    changed();
    [call.state, call.result] = await runCall(call, signal);
    changed();
  }
  return true;
}
