// The chat view: header (model picker, title, settings), the model's banner and the composer,
// around the thread of messages (./thread.js). It listens for model and generation updates and
// redraws what they change at most once per animation frame.

import { acceptsImages, readFiles } from "../attachments.js";
import { h, icon, iconButton, replace } from "../dom.js";
import { formatNumber, percent } from "../format.js";
import { conversations, thread } from "../conversations.js";
import { generations, send } from "../generation.js";
import { contextSize, models, status } from "../models.js";
import { serverTools } from "../tools.js";
import { promptDialog } from "./dialogs.js";
import { ModelPicker } from "./picker.js";
import { settingsDialog } from "./settings.js";
import { failureOf, progressBar } from "./status.js";
import { ThreadView } from "./thread.js";

export class ChatView {
  /** `conversationId` null: a new chat, created from `app.draft` on the first message. */
  constructor(app, conversationId) {
    this.app = app;
    this.conversation = conversationId ? conversations.get(conversationId) : null;
    this.frame = null;
    this.chromeDirty = false;

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
    this.threadView = new ThreadView({
      conversation: this.conversation,
      model: () => this.model(),
      running: () => this.running(),
      canSend: () => this.canSend(),
    });
    this.input = h("textarea", {
      class: "composer-input", rows: 1, "aria-label": "Message",
      onKeydown: (event) => this.onComposerKey(event),
      onInput: () => this.autosize(),
      onPaste: (event) => this.onPaste(event),
    });
    this.sendButton = h("button", { type: "submit", class: "send-btn" });
    this.contextInfo = h("div", { class: "composer-info" });
    // Attachments: a file chooser, paste and drag-and-drop all end in attach().
    this.images = []; // [{ name, url }] waiting to go with the next message
    this.fileInput = h("input", {
      type: "file", multiple: true, class: "offscreen", tabIndex: -1, "aria-hidden": "true",
      onChange: () => {
        this.attach([...this.fileInput.files]);
        this.fileInput.value = "";
      },
    });
    this.attachButton = iconButton("paperclip", "Attach files (text; images for models that take them)",
      () => this.fileInput.click(),
      { class: "icon-btn attach-btn" });
    this.attachments = h("div", { class: "composer-attachments", "aria-label": "Attached images" });
    this.attachNote = h("p", { class: "composer-note", role: "status" });
    this.composer = h("form", {
      class: "composer",
      onSubmit: (event) => { event.preventDefault(); this.submit(); },
      onDragover: (event) => this.onDragOver(event),
      onDragleave: () => this.composer.classList.remove("is-dropping"),
      onDrop: (event) => this.onDrop(event),
    }, this.attachNote, this.attachments,
    h("div", { class: "composer-box" }, this.attachButton, this.fileInput, this.input, this.sendButton),
    this.contextInfo);
    this.el = h("section", { class: "chat" }, this.header, this.banner, this.threadView.el, this.composer);

    // Model statuses show in the header and in replies waiting for their model.
    this.onModels = () => {
      this.refreshChrome();
      this.threadView.markAllDirty();
      this.scheduleFrame();
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
    this.threadView.render();
    this.refreshChrome();
    this.threadView.scrollToBottom();
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
    const tools = (await serverTools()).length > 0;
    const next = await settingsDialog(this.settings(), { tools });
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
    if (this.images.length && models.loaded && !acceptsImages(models.get(id))) {
      this.images = [];
      this.renderAttachments();
      this.attachNote.textContent = "This model does not take images: the attached images were removed.";
    }
    if (!this.conversation?.leaf) this.threadView.render(); // the empty state names the model
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

  // --- attachments ------------------------------------------------------------------------

  onPaste(event) {
    const files = [...(event.clipboardData?.files ?? [])];
    if (!files.length) return; // plain text: the textarea takes it
    event.preventDefault();
    this.attach(files);
  }

  onDragOver(event) {
    if (![...(event.dataTransfer?.types ?? [])].includes("Files")) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    this.composer.classList.add("is-dropping");
  }

  onDrop(event) {
    this.composer.classList.remove("is-dropping");
    const files = [...(event.dataTransfer?.files ?? [])];
    if (!files.length) return;
    event.preventDefault();
    this.attach(files);
  }

  /** Text files go into the message as fenced blocks, images wait as thumbnails. */
  async attach(files) {
    const images = acceptsImages(models.get(this.model()));
    const read = await readFiles(files, { images }).catch((error) =>
      ({ texts: [], images: [], notes: [error.message] }));
    if (read.texts.length) {
      const before = this.input.value.replace(/\s+$/, "");
      this.input.value = [before, ...read.texts].filter(Boolean).join("\n\n");
      this.autosize();
    }
    this.images.push(...read.images);
    this.attachNote.textContent = read.notes.join(" ");
    this.renderAttachments();
    this.input.focus();
  }

  renderAttachments() {
    replace(this.attachments, this.images.map((image, index) =>
      h("figure", { class: "attachment" },
        h("img", { class: "thumb", src: image.url, alt: image.name, title: image.name }),
        iconButton("x", `Remove ${image.name}`, () => {
          this.images.splice(index, 1);
          this.renderAttachments();
        }, { class: "icon-btn attachment-remove" }))));
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
    if ((!text.trim() && !this.images.length) || !this.canSend()) return;
    // Images chosen for a model that takes them stay only while such a model is chosen.
    const images = acceptsImages(models.get(this.model())) ? this.images : [];
    this.input.value = "";
    this.images = [];
    this.attachNote.textContent = "";
    this.renderAttachments();
    this.autosize();
    let conversation = this.conversation;
    if (!conversation) {
      conversation = conversations.create(this.app.draft.model, this.app.draft.settings);
      send(conversation, text, images);
      this.app.navigate(`#/c/${conversation.id}`);
      return;
    }
    send(conversation, text, images);
    this.threadView.render();
    this.threadView.scrollToBottom();
  }

  stop() {
    if (this.conversation) generations.stop(this.conversation);
  }

  // --- live updates -----------------------------------------------------------------------

  onGeneration({ conversationId, messageId }) {
    if (!this.conversation || conversationId !== this.conversation.id) return;
    this.threadView.changed(messageId);
    this.chromeDirty = true;
    this.scheduleFrame();
  }

  /**
   * One redraw per animation frame however many updates arrive. The chrome and the thread are
   * redrawn in the same frame, and whether to stay at the bottom is decided before either
   * changes height.
   */
  scheduleFrame() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      const stick = this.threadView.nearBottom();
      if (this.chromeDirty) {
        this.chromeDirty = false;
        this.refreshChrome();
      }
      this.threadView.redraw();
      if (stick) this.threadView.scrollToBottom();
    });
  }
}
