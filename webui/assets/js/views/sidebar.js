// The sidebar: new chat, the model manager link and the conversations kept in this browser.

import { h, icon, iconButton, KeyedList } from "../dom.js";
import { formatAgo } from "../format.js";
import { conversations } from "../conversations.js";
import { generations } from "../generation.js";
import { models, status } from "../models.js";
import { confirmDialog } from "./dialogs.js";

const THEME_LABELS = { system: "Theme: system", light: "Theme: light", dark: "Theme: dark" };
const THEME_ICONS = { system: "monitor", light: "sun", dark: "moon" };

export class Sidebar {
  constructor(app) {
    this.app = app;
    this.frame = 0; // a pending redraw (requestAnimationFrame id)
    this.filter = h("input", {
      class: "input sidebar-search", type: "search", placeholder: "Search chats",
      "aria-label": "Search chats", onInput: () => this.render(),
    });
    this.list = h("nav", { class: "conv-list", "aria-label": "Conversations" });
    this.items = new KeyedList(this.list);
    this.modelsLink = h("a", { href: "#/models", class: "nav-item", dataset: { focusKey: "models" } });
    this.activityLink = h("a", { href: "#/activity", class: "nav-item", dataset: { focusKey: "activity" } },
      icon("monitor"), h("span", {}, "Activity"));
    this.themeButton = h("button", { type: "button", class: "icon-btn", onClick: () => app.cycleTheme() });
    this.connection = h("span", { class: "connection", role: "status" });
    this.keyScope = h("span", { class: "key-scope", hidden: true });
    this.el = h("aside", { class: "sidebar", id: "sidebar", "aria-label": "Sidebar" },
      h("div", { class: "sidebar-head" },
        h("a", { href: "#/", class: "brand", onClick: () => app.resetDraft() },
          h("span", { class: "brand-mark", "aria-hidden": "true" }, icon("boxes")), "Corral"),
        iconButton("x", "Hide conversations", () => app.closeSidebar(), { class: "icon-btn only-narrow" })),
      h("a", { href: "#/", class: "btn btn-primary new-chat", title: "New chat (Ctrl+Shift+O)",
        onClick: () => app.resetDraft() }, icon("plus"), "New chat"),
      this.modelsLink,
      this.activityLink,
      this.filter,
      this.list,
      h("div", { class: "sidebar-foot" },
        this.connection,
        h("span", { class: "spacer" }),
        this.themeButton,
        this.keyScope,
        iconButton("key", "API key", () => app.editKey())));
    const rerender = () => this.render();
    conversations.addEventListener("change", rerender);
    // A generation updates on every token; the list needs at most one redraw a frame.
    generations.addEventListener("update", () => {
      if (this.frame) return;
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.render();
      });
    });
    models.addEventListener("change", rerender);
    setInterval(rerender, 60_000); // "5 min ago" labels
    this.render();
  }

  render() {
    const route = this.app.route;
    const query = this.filter.value.trim().toLowerCase();
    const shown = conversations.list().filter((c) => !query || c.title.toLowerCase().includes(query));
    const empty = h("p", { class: "muted conv-empty" }, query ? "No chat matches." : "No chats yet.");
    this.items.render(shown.map((conversation) => {
      const active = route.name === "chat" && route.id === conversation.id;
      const running = Boolean(generations.get(conversation.id));
      const missing = models.loaded && conversation.model && !models.get(conversation.model);
      const ago = formatAgo(conversation.updatedAt);
      return {
        key: conversation.id,
        signature: JSON.stringify([conversation.title, conversation.model, ago, active, running, missing]),
        build: () => this.item(conversation, { active, running, missing, ago }),
      };
    }), empty);

    const runningModels = models.models().filter((entry) =>
      ["loaded", "loading", "sleeping"].includes(status(entry))).length;
    const onModels = route.name === "models";
    this.modelsLink.replaceChildren(icon("boxes"), h("span", {}, "Models"),
      h("span", { class: "nav-count" }, models.loaded ? `${runningModels} running` : ""));
    this.modelsLink.classList.toggle("active", onModels);
    if (onModels) this.modelsLink.setAttribute("aria-current", "page");
    else this.modelsLink.removeAttribute("aria-current");
    const onActivity = route.name === "activity";
    this.activityLink.classList.toggle("active", onActivity);
    if (onActivity) this.activityLink.setAttribute("aria-current", "page");
    else this.activityLink.removeAttribute("aria-current");

    const theme = this.app.theme;
    this.themeButton.replaceChildren(icon(THEME_ICONS[theme]));
    this.themeButton.title = `${THEME_LABELS[theme]} (click to change)`;
    this.themeButton.setAttribute("aria-label", this.themeButton.title);

    // Shown only for a keyed router (a key_id): without keys there is nothing to tell apart.
    const access = models.access;
    this.keyScope.hidden = !access?.key_id;
    this.keyScope.textContent = access?.key_id ? `${access.scope} key` : "";
    this.keyScope.title = access?.scope === "inference"
      ? "This key may chat but not manage models"
      : "This key may chat and manage models";

    // The server answering 401 is up: what is missing is the key, not the connection.
    const keyNeeded = !models.connected && models.keyNeeded;
    this.connection.textContent = models.connected ? "live" : keyNeeded ? "key needed" : "offline";
    this.connection.classList.toggle("is-live", models.connected);
    this.connection.classList.toggle("is-key", keyNeeded);
    if (models.connected) this.connection.title = "Receiving live model events from the server";
    else if (keyNeeded) this.connection.title = "The server is up and needs an API key: use the key button";
    else this.connection.title = "Not connected to the server's model events; retrying";
  }

  item(conversation, { active, running, missing, ago }) {
    return h("div", { class: `conv-item${active ? " active" : ""}`, dataset: { id: conversation.id } },
      h("a", { href: `#/c/${conversation.id}`, class: "conv-link",
        "aria-current": active ? "page" : null, dataset: { focusKey: `open:${conversation.id}` } },
      h("span", { class: "conv-title" },
        running ? h("span", { class: "live-dot", title: "Generating", "aria-label": "generating" }) : null,
        conversation.title),
      h("span", { class: "conv-meta" },
        missing ? h("span", { class: "conv-missing" }, `${conversation.model} (gone)`)
          : (conversation.model ?? "no model"),
        ` · ${ago}`)),
      iconButton("trash", `Delete chat “${conversation.title}”`, () => this.remove(conversation),
        { class: "icon-btn conv-delete", dataset: { focusKey: `delete:${conversation.id}` } }));
  }

  async remove(conversation) {
    const ok = await confirmDialog({
      title: "Delete this chat?",
      message: `“${conversation.title}” and all its messages are removed from this browser.`,
      confirm: "Delete",
      danger: true,
    });
    if (!ok) return;
    if (generations.get(conversation.id)) await generations.stop(conversation);
    await conversations.remove(conversation.id);
  }
}
