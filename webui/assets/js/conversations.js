// Conversations and their message trees, in memory and persisted to IndexedDB.
//
// A conversation's messages form a tree: each message names its parent, and the visible thread
// is the path from the root to `leaf`. Editing a message or regenerating a reply adds a sibling
// instead of overwriting, so every earlier version stays reachable ("‹ 2/3 ›" in the thread).
//
// conversation = {
//   id, title, model, createdAt, updatedAt,
//   settings: { system, temperature, top_p, max_tokens, extra,     // null = server default
//               tools, confirm_tools, max_tool_rounds },           // see tools.js
//                                           (max_tokens starts at DEFAULT_MAX_TOKENS)
//   messages: { [id]: { id, parent, role, content, createdAt, model?, state?, stats?, error?,
//                       toolCalls?, toolNote? } },                // toolCalls: see tools.js
//   leaf,                                   // the last message of the visible thread
//   stream: { messageId, model, offset } | null   // a reply still being generated (resumable)
// }

import * as db from "./db.js";

const DEFAULTS_STORAGE = "corral.defaults";
const SAVE_DELAY_MS = 400;
export const DEFAULT_MAX_TOKENS = 1024;

export const BUILTIN_SETTINGS = Object.freeze({
  system: "",
  temperature: null,
  top_p: null,
  // Bounded by default: a small model given no limit can ramble to the end of its context.
  // Shown (and changeable, or emptied for no limit) in the chat settings.
  max_tokens: DEFAULT_MAX_TOKENS,
  extra: "",
  // Server tools (tools.js): offered when the router has them, write/exec calls confirmed.
  tools: true,
  confirm_tools: true,
  max_tool_rounds: null,
});

export function newId(prefix) {
  const random = crypto.getRandomValues(new Uint32Array(2));
  return `${prefix}-${Date.now().toString(36)}${random[0].toString(36)}${random[1].toString(36)}`;
}

/** Settings new conversations start with (the user can save their own). */
export function defaultSettings() {
  try {
    return { ...BUILTIN_SETTINGS, ...JSON.parse(localStorage.getItem(DEFAULTS_STORAGE) ?? "{}") };
  } catch {
    return { ...BUILTIN_SETTINGS };
  }
}

export function saveDefaultSettings(settings) {
  localStorage.setItem(DEFAULTS_STORAGE, JSON.stringify(settings));
}

// --- the message tree ---------------------------------------------------------------------------

export function childrenOf(conversation, parentId) {
  return Object.values(conversation.messages)
    .filter((message) => message.parent === parentId)
    .sort((a, b) => a.createdAt - b.createdAt);
}

/** The visible thread: messages from the root down to `leaf`. */
export function thread(conversation, leaf = conversation.leaf) {
  const path = [];
  for (let id = leaf; id; id = conversation.messages[id]?.parent) {
    path.push(conversation.messages[id]);
  }
  return path.reverse();
}

/** The newest message at the bottom of the branch that starts at `id`. */
export function newestLeafUnder(conversation, id) {
  let current = id;
  for (;;) {
    const children = childrenOf(conversation, current);
    if (!children.length) return current;
    current = children[children.length - 1].id;
  }
}

export function addMessage(conversation, parent, role, content, extra = {}) {
  const message = { id: newId("m"), parent, role, content, createdAt: Date.now(), ...extra };
  conversation.messages[message.id] = message;
  conversation.leaf = message.id;
  conversation.updatedAt = Date.now();
  return message;
}

export function titleFrom(text) {
  const line = text.trim().split("\n")[0].trim();
  return line.length > 60 ? `${line.slice(0, 57)}…` : line || "New chat";
}

// --- the store --------------------------------------------------------------------------------

class ConversationStore extends EventTarget {
  constructor() {
    super();
    this.byId = new Map();
    this.saveTimers = new Map();
  }

  async load() {
    for (const conversation of await db.loadAll()) {
      // A reply left "streaming" without a saved stream cannot be resumed: say it was cut.
      for (const message of Object.values(conversation.messages)) {
        if (message.state === "streaming" && conversation.stream?.messageId !== message.id) {
          message.state = "interrupted";
        }
      }
      this.byId.set(conversation.id, conversation);
    }
    this.changed(null);
  }

  /** Newest first. */
  list() {
    return [...this.byId.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get(id) {
    return this.byId.get(id) ?? null;
  }

  create(model, settings) {
    const now = Date.now();
    const conversation = {
      id: newId("c"),
      title: "New chat",
      model,
      createdAt: now,
      updatedAt: now,
      settings: { ...settings },
      messages: {},
      leaf: null,
      stream: null,
    };
    this.byId.set(conversation.id, conversation);
    return conversation;
  }

  /** Write now (awaitable) and tell listeners. */
  async save(conversation) {
    clearTimeout(this.saveTimers.get(conversation.id));
    this.saveTimers.delete(conversation.id);
    this.changed(conversation.id);
    if (this.byId.has(conversation.id)) await db.put(conversation);
  }

  /** Write a little later; many calls in a row (a streaming reply) make one write. */
  saveSoon(conversation) {
    if (this.saveTimers.has(conversation.id)) return;
    this.saveTimers.set(conversation.id, setTimeout(() => this.save(conversation), SAVE_DELAY_MS));
  }

  async remove(id) {
    clearTimeout(this.saveTimers.get(id));
    this.saveTimers.delete(id);
    this.byId.delete(id);
    await db.remove(id);
    this.changed(id);
  }

  changed(id) {
    this.dispatchEvent(new CustomEvent("change", { detail: { id } }));
  }
}

export const conversations = new ConversationStore();
