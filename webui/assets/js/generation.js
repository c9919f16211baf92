// Generating replies: streaming chat requests, stop, and resuming after a page reload.
//
// Every request carries `X-Conversation-Id: <conversation id>::<model>` (llama.cpp's stream
// identity), which makes the router keep the generation going when this page goes away and
// lets a later page replay it with GET /v1/stream?conv_id=…&from=<byte offset>. While a reply
// streams, the conversation record holds `stream = {messageId, model, offset}`, and the offset
// is saved in the same IndexedDB write as the text received up to it, so a reloaded page
// continues exactly where the saved text ends. Stop is DELETE /v1/stream (closing the
// connection alone would not stop a resumable generation).

import { api, apiJson, errorOf, readEvents, sleep } from "./api.js";
import { contentOf } from "./attachments.js";
import { addMessage, conversations, thread, titleFrom } from "./conversations.js";
import { contextSize, models, status } from "./models.js";
import { addToolCallDeltas, offeredTools, runToolCalls, toolTurn } from "./tools.js";

const RESUME_RETRY_MS = 2000; // as llama.cpp's UI, while the owning model is still loading
const MAX_RECONNECTS = 3; // a dropped connection is retried as a resume this many times

// A reload or a closed tab aborts the page's fetches; that must not be taken for a failure
// (which would clear the saved stream and lose the chance to resume it).
let unloading = false;
addEventListener("beforeunload", () => {
  unloading = true;
});
addEventListener("pagehide", () => {
  unloading = true;
});
addEventListener("pageshow", () => {
  unloading = false; // back from the browser's page cache
});

export function streamId(conversationId, model) {
  return `${conversationId}::${model}`;
}

/** The settings' "extra" JSON text as an object; throws a readable error when it is invalid. */
export function parseExtra(text) {
  if (!text || !text.trim()) return {};
  const value = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("Extra parameters must be a JSON object, like {\"top_k\": 20}.");
  }
  return value;
}

function requestBody(conversation, history, model, tools) {
  const settings = conversation.settings ?? {};
  const messages = [];
  if (settings.system?.trim()) messages.push({ role: "system", content: settings.system });
  for (const message of history) {
    if (message.role === "user") {
      messages.push({ role: "user", content: contentOf(message) });
    } else if (message.role === "assistant" && message.toolCalls?.length) {
      messages.push(...toolTurn(message));
    } else if (message.role === "assistant" && message.content) {
      messages.push({ role: "assistant", content: message.content });
    }
  }
  let extra = {};
  try {
    extra = parseExtra(settings.extra);
  } catch {
    // validated when saved; an old invalid value is ignored rather than blocking the chat
  }
  const body = { ...extra };
  for (const key of ["temperature", "top_p", "max_tokens"]) {
    if (settings[key] !== null && settings[key] !== undefined) body[key] = settings[key];
  }
  if (tools.length) body.tools = tools.map((tool) => tool.definition);
  return { ...body, model, messages, stream: true };
}

function statsOf(chunk, model, previous) {
  const usage = chunk.usage ?? {};
  const timings = chunk.timings ?? {};
  const prompt = usage.prompt_tokens ?? (timings.prompt_n ?? 0) + (timings.cache_n ?? 0);
  const completion = usage.completion_tokens ?? timings.predicted_n ?? 0;
  return {
    ...previous,
    promptTokens: prompt,
    completionTokens: completion,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? timings.cache_n ?? 0,
    tokensPerSecond: timings.predicted_per_second ?? null,
    promptPerSecond: timings.prompt_per_second ?? null,
    context: prompt + completion,
    contextSize: contextSize(models.get(model)),
  };
}

class Generations extends EventTarget {
  constructor() {
    super();
    this.running = new Map(); // conversation id -> run
  }

  get(conversationId) {
    return this.running.get(conversationId) ?? null;
  }

  notify(conversation, message) {
    this.dispatchEvent(new CustomEvent("update", {
      detail: { conversationId: conversation.id, messageId: message?.id ?? null },
    }));
  }

  begin(conversation, message, phase) {
    this.running.get(conversation.id)?.controller.abort();
    const run = {
      controller: new AbortController(),
      messageId: message.id,
      model: message.model,
      phase, // "sending" | "streaming" | "waiting" (model loading) | "resuming"
      stopped: false,
      chunks: 0,
      startedAt: performance.now(),
      reconnects: 0,
    };
    this.running.set(conversation.id, run);
    message.state = "streaming";
    this.notify(conversation, message);
    return run;
  }

  finish(conversation, message, state, error = null) {
    const run = this.running.get(conversation.id);
    if (run?.messageId === message.id) this.running.delete(conversation.id);
    message.state = state;
    if (error) message.error = error;
    if (conversation.stream?.messageId === message.id) conversation.stream = null;
    conversations.save(conversation);
    this.notify(conversation, message);
    if (message.stats && !message.stats.contextSize) this.fillContextSize(conversation, message);
  }

  // A model loaded by this very request is listed without its context size until the list is
  // fetched again (the final chunk can arrive first): fill it in once the list has it.
  async fillContextSize(conversation, message) {
    await models.refresh().catch(() => {});
    const size = contextSize(models.get(message.model));
    if (!size || !message.stats) return;
    message.stats.contextSize = size;
    conversations.save(conversation);
    this.notify(conversation, message);
  }

  /** Generate the reply `message` (an empty assistant message already in the tree). */
  async start(conversation, message) {
    const model = message.model;
    conversation.stream = { messageId: message.id, model, offset: 0 };
    const run = this.begin(conversation, message, "sending");
    // Saved before the request goes out: a reload from now on knows there is a stream.
    await conversations.save(conversation);
    try {
      const tools = await offeredTools(conversation.settings, model);
      const body = requestBody(conversation, thread(conversation, message.parent), model, tools);
      if (models.props?.models_autoload === false && status(models.get(model)) === "unloaded") {
        await models.load(model);
      }
      const response = await api("./v1/chat/completions", {
        method: "POST",
        json: body,
        headers: { "X-Conversation-Id": streamId(conversation.id, model) },
        signal: run.controller.signal,
      });
      if (run.stopped) return;
      if (!response.ok) {
        const error = await errorOf(response);
        this.finish(conversation, message, "error", error.message);
        return;
      }
      await this.consume(run, conversation, message, response, 0);
    } catch (error) {
      this.failed(run, conversation, message, error);
    }
  }

  async consume(run, conversation, message, response, from) {
    run.phase = "streaming";
    this.notify(conversation, message);
    let sawDone = false;
    await readEvents(response, from, (data, offset) => {
      if (run.stopped || this.running.get(conversation.id) !== run) return;
      if (data === "[DONE]") {
        sawDone = true;
      } else {
        try {
          this.apply(run, message, JSON.parse(data));
        } catch {
          return; // not JSON: nothing to show (and the offset waits for the next event)
        }
      }
      if (conversation.stream) conversation.stream.offset = offset;
      conversations.saveSoon(conversation);
      this.notify(conversation, message);
    });
    if (run.stopped || this.running.get(conversation.id) !== run) return;
    let state = "done";
    if (message.error) state = "error";
    else if (!sawDone && !message.finish) state = "interrupted";
    if (state === "done" && message.toolCalls?.length) await this.runTools(run, conversation, message);
    else this.finish(conversation, message, state);
  }

  // The reply asked for tools: run them, then ask the model again with their results.
  async runTools(run, conversation, message) {
    run.phase = "tools";
    conversation.stream = null; // the stream is complete: a reload now ends the loop here
    conversations.save(conversation);
    this.notify(conversation, message);
    const again = await runToolCalls(conversation, message, run.controller.signal,
      () => this.notify(conversation, message));
    if (run.stopped || this.running.get(conversation.id) !== run) return;
    this.finish(conversation, message, "done");
    if (again) reply(conversation, message.id);
  }

  apply(run, message, chunk) {
    if (chunk.error) {
      message.error = chunk.error.message ?? String(chunk.error);
      return;
    }
    const choice = chunk.choices?.[0];
    const delta = choice?.delta ?? {};
    if (delta.reasoning_content) message.reasoning = (message.reasoning ?? "") + delta.reasoning_content;
    if (delta.content) {
      message.content += delta.content;
      run.chunks += 1;
    }
    if (delta.tool_calls) {
      addToolCallDeltas(message, delta.tool_calls);
      run.chunks += 1;
    }
    if (choice?.finish_reason) message.finish = choice.finish_reason;
    if (chunk.usage || chunk.timings) message.stats = statsOf(chunk, message.model, message.stats);
  }

  // A request that ended without an answer. A dropped connection is retried as a resume: the
  // router may well still be generating into the stream session.
  failed(run, conversation, message, error) {
    if (run.stopped || unloading || this.running.get(conversation.id) !== run) return;
    if (error?.status === 401) {
      this.finish(conversation, message, "error", error.message);
      return;
    }
    if (conversation.stream && run.reconnects < MAX_RECONNECTS) {
      this.resume(conversation, run.reconnects + 1);
      return;
    }
    this.finish(conversation, message, "interrupted", String(error?.message ?? error));
  }

  /** Reattach to the saved stream of `conversation` and finish its reply. */
  async resume(conversation, reconnects = 0) {
    const pending = conversation.stream;
    const message = pending && conversation.messages[pending.messageId];
    if (!message) {
      conversation.stream = null;
      conversations.save(conversation);
      return;
    }
    message.model ??= pending.model;
    const run = this.begin(conversation, message, "resuming");
    run.reconnects = reconnects;
    const conv = encodeURIComponent(streamId(conversation.id, pending.model));
    try {
      for (;;) {
        const response = await api(`./v1/stream?conv_id=${conv}&from=${pending.offset}`, {
          signal: run.controller.signal,
        });
        if (response.status === 503) {
          // The owning model is still loading: the request is parked, try again shortly.
          await response.body?.cancel();
          run.phase = "waiting";
          this.notify(conversation, message);
          await sleep(RESUME_RETRY_MS, run.controller.signal);
          continue;
        }
        if (!response.ok) {
          const error = await errorOf(response);
          const reason = `The rest of this reply is no longer available (${error.message}).`;
          this.finish(conversation, message, "interrupted", reason);
          return;
        }
        await this.consume(run, conversation, message, response, pending.offset);
        return;
      }
    } catch (error) {
      this.failed(run, conversation, message, error);
    }
  }

  /** At start: find replies that were streaming when the page went away and finish them. */
  async resumeAll() {
    const pending = conversations.list().filter((c) => c.stream && !this.running.has(c.id));
    if (!pending.length) return;
    const ids = pending.map((c) => streamId(c.id, c.stream.model));
    // Ask the router which sessions it still has, as llama.cpp's UI does. A session whose
    // model is still loading is not listed (only running workers are asked), so every pending
    // stream is then probed with GET: 200 replays it, 503 means retry, 404 means it is gone.
    const found = await apiJson("./v1/streams/lookup", {
      method: "POST", json: { conversation_ids: ids },
    }).catch(() => []);
    const sessions = new Map((found ?? []).map((item) => [item.conversation_id, item]));
    for (const conversation of pending) {
      const session = sessions.get(streamId(conversation.id, conversation.stream.model));
      if (session && session.total_bytes < conversation.stream.offset) {
        // Shorter than what was saved: a newer request (another tab) replaced that session.
        const message = conversation.messages[conversation.stream.messageId];
        if (message) this.finish(conversation, message, "interrupted", "The reply was replaced.");
        continue;
      }
      this.resume(conversation);
    }
  }

  /** Stop the reply being generated in `conversation`; the text so far is kept. */
  async stop(conversation) {
    const run = this.running.get(conversation.id);
    if (!run) return;
    run.stopped = true;
    run.controller.abort();
    const message = conversation.messages[run.messageId];
    if (message) this.finish(conversation, message, "stopped");
    const conv = encodeURIComponent(streamId(conversation.id, run.model));
    await api(`./v1/stream?conv_id=${conv}`, { method: "DELETE" }).catch(() => {});
  }
}

export const generations = new Generations();

// --- chat actions -----------------------------------------------------------------------------

/**
 * Add the user's message under the current thread and generate the reply. `images`: attached
 * images, [{ name, url }] with data: URIs, sent as image_url content parts.
 */
export function send(conversation, text, images = []) {
  const first = !conversation.leaf;
  const user = addMessage(conversation, conversation.leaf, "user", text,
    images.length ? { images } : {});
  if (first) conversation.title = titleFrom(text);
  return reply(conversation, user.id);
}

/** A new reply to the user message `parentId` (a sibling of earlier replies). */
export function reply(conversation, parentId) {
  const message = addMessage(conversation, parentId, "assistant", "", {
    model: conversation.model,
    state: "streaming",
  });
  generations.start(conversation, message);
  return message;
}

/** Regenerate: another reply to the same user message. */
export function regenerate(conversation, assistantId) {
  const parent = conversation.messages[assistantId]?.parent;
  if (parent) reply(conversation, parent);
}

/** Edit a message as a new branch; an edited user message gets a fresh reply. */
export function editMessage(conversation, messageId, text) {
  const original = conversation.messages[messageId];
  if (!original) return;
  if (original.role === "user") {
    const user = addMessage(conversation, original.parent, "user", text,
      original.images?.length ? { images: original.images } : {}); // the edit keeps its images
    if (!original.parent) conversation.title = titleFrom(text);
    reply(conversation, user.id);
  } else {
    addMessage(conversation, original.parent, "assistant", text, {
      model: original.model, state: "done", edited: true,
    });
    conversations.save(conversation);
  }
}
