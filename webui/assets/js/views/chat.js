// The chat view: header (model picker, title, settings), the visible thread and the composer.
//
// The thread is rebuilt when its shape changes (a message added, a branch switched); while a
// reply streams only that reply's element is updated, at most once per animation frame.

import { copyText, flashCopied, h, icon, iconButton, replace } from "../dom.js";
import { formatNumber, percent } from "../format.js";
import {
  childrenOf, conversations, newestLeafUnder, thread,
} from "../conversations.js";
import { editMessage, generations, regenerate, send } from "../generation.js";
import { renderMarkdown } from "../markdown.js";
import { contextSize, models, status } from "../models.js";
import { promptDialog } from "./dialogs.js";
import { replyStats, replyStatus } from "./message.js";
import { ModelPicker } from "./picker.js";
import { settingsDialog } from "./settings.js";
import { failureOf, progressBar } from "./status.js";

const STICK_TO_BOTTOM_PX = 80;

export class ChatView {
  /** `conversationId` null: a new chat, created from `app.draft` on the first message. */
  constructor(app, conversationId) {
    this.app = app;
    this.conversation = conversationId ? conversations.get(conversationId) : null;
    this.editing = null; // id of the message being edited
    this.rendered = new Map(); // message id -> { el, body, status, foot }
    this.frame = null;
    this.dirty = new Set();
    this.chromeDirty = false;
    this.wasBusy = false;

    this.picker = new ModelPicker({
      current: () => this.model(),
      onSelect: (id) => this.chooseModel(id),
    });
    this.title = h("button", {
      type: "button", class: "chat-title", title: "Rename this chat",
      onClick: () => this.rename(),
    });
    this.header = h("header", { class: "topbar" },
      iconButton("menu", "Show conversations", () => app.toggleSidebar(), { class: "icon-btn only-narrow" }),
      this.picker.el,
      this.title,
      iconButton("sliders", "Chat settings", () => this.editSettings(), { class: "icon-btn settings-btn" }));
    this.banner = h("div", { class: "banner-slot" });
    this.log = h("div", { class: "thread", role: "log", "aria-label": "Messages", "aria-live": "polite" });
    this.scroller = h("div", { class: "thread-scroll" }, this.log);
    this.input = h("textarea", {
      class: "composer-input", rows: 1, "aria-label": "Message",
      onKeydown: (event) => this.onComposerKey(event),
      onInput: () => this.autosize(),
    });
    this.sendButton = h("button", { type: "submit", class: "send-btn" });
    this.contextInfo = h("div", { class: "composer-info" });
    this.composer = h("form", {
      class: "composer",
      onSubmit: (event) => { event.preventDefault(); this.submit(); },
    }, h("div", { class: "composer-box" }, this.input, this.sendButton), this.contextInfo);
    this.el = h("section", { class: "chat" }, this.header, this.banner, this.scroller, this.composer);

    // Model statuses show in the header and in replies waiting for their model.
    this.onModels = () => {
      this.refreshChrome();
      this.markAllDirty();
    };
    this.onUpdate = (event) => this.onGeneration(event.detail);
    this.onStore = (event) => {
      const id = event.detail.id;
      if (this.conversation && id === this.conversation.id && !conversations.get(id)) {
        app.navigate("#/"); // deleted from the sidebar
      }
    };
    models.addEventListener("change", this.onModels);
    generations.addEventListener("update", this.onUpdate);
    conversations.addEventListener("change", this.onStore);
    this.renderThread();
    this.wasBusy = Boolean(this.running());
    this.refreshChrome();
    this.scrollToBottom();
  }

  destroy() {
    this.picker.destroy();
    models.removeEventListener("change", this.onModels);
    generations.removeEventListener("update", this.onUpdate);
    conversations.removeEventListener("change", this.onStore);
    cancelAnimationFrame(this.frame);
  }

  focus() {
    this.input.focus();
  }

  model() {
    return this.conversation ? this.conversation.model : this.app.draft.model;
  }

  settings() {
    return this.conversation ? this.conversation.settings : this.app.draft.settings;
  }

  running() {
    return this.conversation ? generations.get(this.conversation.id) : null;
  }

  // --- header and banner ------------------------------------------------------------------

  async chooseModel(id) {
    if (this.conversation) {
      this.conversation.model = id;
      await conversations.save(this.conversation);
    } else {
      this.app.draft.model = id;
    }
    this.app.rememberModel(id);
    this.refreshChrome();
    const entry = models.get(id);
    if (entry && status(entry) === "unloaded") {
      try {
        await models.load(id);
      } catch (error) {
        this.app.toast(`Could not load ${id}: ${error.message}`, "error");
      }
    }
    this.input.focus();
  }

  async rename() {
    if (!this.conversation) return;
    const title = await promptDialog({
      title: "Rename chat", label: "Title", value: this.conversation.title,
    });
    if (title === null || !title.trim()) return;
    this.conversation.title = title.trim();
    await conversations.save(this.conversation);
    this.refreshChrome();
  }

  async editSettings() {
    const next = await settingsDialog(this.settings());
    if (!next) return;
    if (this.conversation) {
      this.conversation.settings = next;
      await conversations.save(this.conversation);
    } else {
      this.app.draft.settings = next;
    }
    this.refreshChrome();
  }

  /** Everything that depends on the model list or the run state, not on the messages. */
  refreshChrome() {
    this.picker.update();
    this.title.textContent = this.conversation?.title ?? "New chat";
    this.title.disabled = !this.conversation;
    replace(this.banner, this.bannerContent());
    const running = this.running();
    const id = this.model();
    replace(this.sendButton, icon(running ? "stop" : "send"));
    this.sendButton.classList.toggle("is-stop", Boolean(running));
    this.sendButton.setAttribute("aria-label", running ? "Stop (Esc)" : "Send (Enter)");
    this.sendButton.title = running ? "Stop (Esc)" : "Send (Enter)";
    this.sendButton.disabled = !running && !this.canSend();
    this.input.placeholder = id ? `Message ${id}` : "Choose a model to start";
    replace(this.contextInfo, this.contextLine());
    if (!this.conversation?.leaf) replace(this.log, this.emptyState()); // names the model
  }

  canSend() {
    const id = this.model();
    if (!id) return false;
    return !models.loaded || Boolean(models.get(id));
  }

  bannerContent() {
    const id = this.model();
    if (!id || !models.loaded) return null;
    const entry = models.get(id);
    if (!entry) {
      return h("div", { class: "banner banner-warn", role: "status" }, icon("alert"),
        h("span", {}, `The model “${id}” is no longer available on this server. `
          + "Choose another model to continue this chat."));
    }
    const failure = failureOf(entry);
    if (failure && status(entry) === "unloaded") {
      return h("div", { class: "banner banner-error", role: "alert" }, icon("alert"),
        h("span", { class: "banner-text" }, `${id} failed: ${failure}`),
        h("button", { type: "button", class: "btn btn-small", onClick: () => this.chooseModel(id) },
          "Retry"));
    }
    if (status(entry) === "loading") {
      return h("div", { class: "banner banner-info", role: "status" },
        h("span", { class: "banner-text" }, `Loading ${id}…`),
        progressBar(models.loading.get(id) ?? null, `Loading ${id}`));
    }
    return null;
  }

  contextLine() {
    const last = this.conversation && [...thread(this.conversation)].reverse()
      .find((message) => message.role === "assistant" && message.stats);
    const size = contextSize(models.get(this.model())) ?? last?.stats?.contextSize;
    const hints = h("span", { class: "keys only-wide" },
      "Enter to send · Shift+Enter for a new line · Esc to stop");
    if (!last || !size) return hints;
    const used = last.stats.context;
    return [h("span", { title: "Tokens of the model's context this chat uses (one slot)" },
      `Context: ${formatNumber(used)} / ${formatNumber(size)} tokens (${percent(used / size)})`),
    hints];
  }

  // --- composer ---------------------------------------------------------------------------

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  onComposerKey(event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!this.running()) this.submit();
    }
  }

  async submit() {
    if (this.running()) {
      this.stop();
      return;
    }
    const text = this.input.value;
    if (!text.trim() || !this.canSend()) return;
    this.input.value = "";
    this.autosize();
    let conversation = this.conversation;
    if (!conversation) {
      conversation = conversations.create(this.app.draft.model, this.app.draft.settings);
      send(conversation, text);
      this.app.navigate(`#/c/${conversation.id}`);
      return;
    }
    send(conversation, text);
    this.renderThread();
    this.scrollToBottom();
  }

  stop() {
    if (this.conversation) generations.stop(this.conversation);
  }

  // --- the thread -------------------------------------------------------------------------

  renderThread() {
    this.rendered.clear();
    if (!this.conversation || !this.conversation.leaf) {
      replace(this.log, this.emptyState());
      return;
    }
    replace(this.log, thread(this.conversation).map((message) => this.messageEl(message)));
  }

  emptyState() {
    const id = this.model();
    return h("div", { class: "empty" },
      h("div", { class: "empty-mark", "aria-hidden": "true" }, icon("chat")),
      h("h1", {}, id ? `Chat with ${id}` : "Start a chat"),
      h("p", { class: "muted" }, id
        ? "Replies stream in as they are generated, and a reload picks up where it left off."
        : "Pick a model above. Models that are not running are loaded when you choose them."));
  }

  messageEl(message) {
    const body = h("div", { class: message.role === "user" ? "msg-body plain" : "msg-body md" });
    const reasoning = h("details", { class: "msg-reasoning", hidden: true },
      h("summary", {}, "Reasoning"), h("div", { class: "msg-reasoning-text plain" }));
    const statusLine = h("div", { class: "msg-status" });
    const foot = h("footer", { class: "msg-foot" });
    const head = message.role === "assistant"
      ? h("div", { class: "msg-head" }, message.model ?? "assistant") : null;
    const el = h("article", {
      class: `msg msg-${message.role}`, dataset: { id: message.id },
      "aria-label": message.role === "user" ? "Your message" : "Reply",
    }, head, reasoning, body, statusLine, foot);
    const parts = { el, body, reasoning, statusLine, foot, shown: null };
    this.rendered.set(message.id, parts);
    this.fill(message, parts);
    return el;
  }

  /** (Re)draw one message into its element. */
  fill(message, parts) {
    const run = this.running();
    // Live: being generated by this page. A "streaming" message that is not live yet was
    // being generated when the page loaded and is about to be resumed.
    const live = run?.messageId === message.id || message.state === "streaming";
    parts.el.dataset.state = live ? "streaming" : (message.state ?? "done");
    if (this.editing === message.id) {
      if (!parts.editor) this.fillEditor(message, parts); // built once: it holds the user's text
      return;
    }
    parts.editor = null;
    // Markdown is re-rendered only when the text changed (most updates are status ticks).
    const key = `${message.content.length}:${live}`;
    if (parts.shown !== key) {
      parts.shown = key;
      if (message.role === "user") parts.body.textContent = message.content;
      else if (message.content) renderMarkdown(parts.body, message.content, { final: !live });
      else parts.body.replaceChildren();
      parts.body.classList.toggle("is-live", live);
    }
    if (message.reasoning) {
      parts.reasoning.hidden = false;
      parts.reasoning.lastChild.textContent = message.reasoning;
    }
    replace(parts.statusLine, replyStatus(message, run, live));
    // The footer holds buttons: rebuilt only when what it shows changes, since a button that
    // is replaced between press and release loses the click (and keyboard focus).
    const siblings = childrenOf(this.conversation, message.parent);
    const footKey = JSON.stringify([live, Boolean(run), this.canSend(), message.stats ?? null,
      message.finish ?? null, siblings.map((item) => item.id)]);
    if (parts.footKey !== footKey) {
      parts.footKey = footKey;
      replace(parts.foot, this.footOf(message, live, siblings));
    }
  }

  footOf(message, live, siblings) {
    const items = [];
    const busy = Boolean(this.running());
    if (siblings.length > 1) {
      const index = siblings.findIndex((item) => item.id === message.id);
      items.push(h("div", { class: "branches", role: "group", "aria-label": "Versions" },
        iconButton("left", "Previous version", () => this.showBranch(siblings[index - 1]),
          { disabled: busy || index === 0 }),
        h("span", { class: "branch-count" }, `${index + 1}/${siblings.length}`),
        iconButton("right", "Next version", () => this.showBranch(siblings[index + 1]),
          { disabled: busy || index === siblings.length - 1 })));
    }
    if (message.role === "assistant" && message.stats && !live) items.push(replyStats(message));
    if (!live) {
      const copy = iconButton("copy", "Copy", async () => {
        await copyText(message.content);
        flashCopied(copy);
      });
      const actions = [copy];
      actions.push(iconButton("edit", message.role === "user" ? "Edit and resend" : "Edit",
        () => this.startEdit(message), { disabled: busy }));
      if (message.role === "assistant") {
        actions.push(iconButton("refresh", "Regenerate", () => this.regenerate(message),
          { disabled: busy || !this.canSend() }));
      }
      items.push(h("div", { class: "msg-actions" }, actions));
    }
    return items;
  }

  async showBranch(sibling) {
    if (!sibling) return;
    this.conversation.leaf = newestLeafUnder(this.conversation, sibling.id);
    await conversations.save(this.conversation);
    this.renderThread();
  }

  regenerate(message) {
    regenerate(this.conversation, message.id);
    this.renderThread();
    this.scrollToBottom();
  }

  startEdit(message) {
    this.editing = message.id;
    const parts = this.rendered.get(message.id);
    if (parts) this.fill(message, parts);
  }

  fillEditor(message, parts) {
    const area = h("textarea", { class: "input edit-input", value: message.content,
      "aria-label": "Edit message", rows: Math.min(12, message.content.split("\n").length + 1) });
    const cancel = () => {
      this.editing = null;
      parts.shown = null;
      this.fill(message, parts);
    };
    const save = () => {
      const text = area.value;
      this.editing = null;
      if (!text.trim() || text === message.content) {
        cancel();
        return;
      }
      editMessage(this.conversation, message.id, text);
      this.renderThread();
      this.scrollToBottom();
    };
    area.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        cancel();
      } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing
        && message.role === "user") {
        event.preventDefault();
        save();
      }
    });
    parts.editor = area;
    parts.footKey = null;
    replace(parts.body, area);
    replace(parts.statusLine);
    replace(parts.foot, h("div", { class: "edit-actions" },
      h("button", { type: "button", class: "btn btn-small", onClick: cancel }, "Cancel"),
      h("button", { type: "button", class: "btn btn-small btn-primary", onClick: save },
        message.role === "user" ? "Send" : "Save")));
    area.focus();
  }

  // --- live updates -----------------------------------------------------------------------

  onGeneration({ conversationId, messageId }) {
    if (!this.conversation || conversationId !== this.conversation.id) return;
    if (messageId && !this.rendered.has(messageId)) {
      const inThread = thread(this.conversation).some((message) => message.id === messageId);
      if (inThread) this.renderThread();
    }
    if (messageId) this.dirty.add(messageId);
    // A run starting or ending enables or disables every message's buttons.
    const busy = Boolean(this.running());
    if (busy !== this.wasBusy) {
      this.wasBusy = busy;
      this.markAllDirty();
    }
    this.chromeDirty = true;
    this.scheduleFrame();
  }

  markAllDirty() {
    for (const id of this.rendered.keys()) this.dirty.add(id);
    this.scheduleFrame();
  }

  scheduleFrame() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      const stick = this.nearBottom();
      if (this.chromeDirty) {
        this.chromeDirty = false;
        this.refreshChrome();
      }
      for (const id of this.dirty) {
        const message = this.conversation?.messages[id];
        const parts = this.rendered.get(id);
        if (message && parts) this.fill(message, parts);
      }
      this.dirty.clear();
      if (stick) this.scrollToBottom();
    });
  }

  nearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < STICK_TO_BOTTOM_PX;
  }

  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }
}
