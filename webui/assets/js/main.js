// Corral's Web UI: routing between the chat and the model manager, theme, toasts, keys.
//
// Routes live in the URL fragment (#/, #/c/<id>, #/models, #/activity), so the router serves the page at
// a single address and never needs a catch-all route that could shadow its API.

import { onKeyNeeded } from "./api.js";
import { ActivityView } from "./views/activity.js";
import { conversations, defaultSettings } from "./conversations.js";
import { h } from "./dom.js";
import { generations } from "./generation.js";
import { models, status } from "./models.js";
import { ChatView } from "./views/chat.js";
import { onToolConfirm } from "./tools.js";
import { apiKeyDialog, toolCallDialog } from "./views/dialogs.js";
import { ManagerView } from "./views/manager.js";
import { Sidebar } from "./views/sidebar.js";

const MODEL_STORAGE = "corral.model";
const THEME_STORAGE = "corral.theme";
const THEMES = ["system", "light", "dark"];

class App {
  constructor() {
    this.route = { name: "chat", id: null };
    this.view = null;
    this.draft = { model: localStorage.getItem(MODEL_STORAGE), settings: defaultSettings() };
    this.theme = localStorage.getItem(THEME_STORAGE) ?? "system";
    this.main = h("main", { class: "main", id: "main" });
    // In the main column's flow, under the view, rather than laid over it: a toast then covers
    // no control (the send button, a row's buttons), at any width; the view gives it room.
    this.toasts = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
    this.scrim = h("div", { class: "scrim", onClick: () => this.closeSidebar() });
    this.sidebar = new Sidebar(this);
    document.body.replaceChildren(
      h("div", { class: "app" }, this.sidebar.el, this.scrim, this.main));
  }

  async start() {
    onKeyNeeded((options) => {
      // The server answered 401, so it is up: while the dialog asks, the sidebar says
      // "key needed", not "offline" (docs/webui.md). A key that works clears it (models.start).
      models.keyNeeded = true;
      models.changed();
      return apiKeyDialog(options);
    });
    onToolConfirm((call) => toolCallDialog(call));
    addEventListener("hashchange", () => this.show());
    addEventListener("keydown", (event) => this.onKey(event));
    await conversations.load();
    this.show();
    await this.connect();
  }

  // The model list, its events and the resumption of interrupted replies all need the server
  // (and its key, when it has one): retried when the user enters a key later.
  async connect() {
    try {
      await models.start();
    } catch (error) {
      if (error?.status === 401) this.toast("This server needs an API key: enter it with the key button.", "error");
      else this.toast(`Cannot reach the server: ${error.message}`, "error");
      return;
    }
    this.pickDefaultModel();
    generations.resumeAll();
  }

  // A new chat starts with the model used last, if the server still has it, else a loaded one.
  pickDefaultModel() {
    if (this.draft.model && models.get(this.draft.model)) return;
    const all = models.models();
    const loaded = all.find((entry) => status(entry) === "loaded");
    this.draft.model = (loaded ?? all[0])?.id ?? null;
    if (this.view instanceof ChatView) this.view.refreshChrome();
  }

  rememberModel(id) {
    localStorage.setItem(MODEL_STORAGE, id);
    this.draft.model = id;
  }

  resetDraft() {
    this.draft.settings = defaultSettings();
    if (this.route.name === "chat" && !this.route.id) this.show(); // already on #/: refresh
  }

  newChatWith(id) {
    this.rememberModel(id);
    this.resetDraft();
    this.navigate("#/");
    // An inference key may not load (403); its first message loads the model instead.
    if (models.canManage && models.get(id) && status(models.get(id)) === "unloaded") {
      models.load(id).catch((error) => this.toast(`Could not load ${id}: ${error.message}`, "error"));
    }
  }

  navigate(hash) {
    if (location.hash === hash) this.show();
    else location.hash = hash;
  }

  parseRoute() {
    const hash = location.hash.replace(/^#/, "");
    if (hash === "/models") return { name: "models", id: null };
    if (hash === "/activity") return { name: "activity", id: null };
    const match = /^\/c\/([\w-]+)$/.exec(hash);
    if (match && conversations.get(match[1])) return { name: "chat", id: match[1] };
    return { name: "chat", id: null };
  }

  show() {
    this.route = this.parseRoute();
    this.view?.destroy();
    const views = { models: ManagerView, activity: ActivityView };
    const View = views[this.route.name];
    this.view = View ? new View(this) : new ChatView(this, this.route.id);
    this.main.replaceChildren(this.view.el, this.toasts);
    this.closeSidebar();
    this.sidebar.render();
    const titles = { models: "Models", activity: "Activity" };
    document.title = `${titles[this.route.name]
      ?? conversations.get(this.route.id)?.title ?? "New chat"} · Corral`;
    // On a phone the keyboard would cover the page: focus the input only on wider screens.
    if (matchMedia("(min-width: 760px)").matches) this.view.focus();
  }

  onKey(event) {
    if (event.defaultPrevented) return;
    const dialogOpen = Boolean(document.querySelector("dialog[open]"));
    if (event.key === "Escape" && !dialogOpen) {
      if (document.body.classList.contains("sidebar-open")) {
        this.closeSidebar();
        return;
      }
      const conversation = this.route.id && conversations.get(this.route.id);
      if (conversation && generations.get(conversation.id)) {
        event.preventDefault();
        generations.stop(conversation);
      }
    } else if (event.key.toLowerCase() === "o" && event.shiftKey && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      this.resetDraft();
      this.navigate("#/");
    }
  }

  toggleSidebar() {
    document.body.classList.toggle("sidebar-open");
  }

  closeSidebar() {
    document.body.classList.remove("sidebar-open");
  }

  cycleTheme() {
    this.theme = THEMES[(THEMES.indexOf(this.theme) + 1) % THEMES.length];
    localStorage.setItem(THEME_STORAGE, this.theme);
    applyTheme(this.theme);
    this.sidebar.render();
  }

  async editKey() {
    const key = await apiKeyDialog({ optional: true });
    if (key === null) return;
    this.toast(key ? "API key saved in this browser." : "API key forgotten.");
    if (!models.loaded) {
      await this.connect();
    } else {
      models.refreshAccess().catch(() => {});
      models.refresh().catch(() => {});
      if (models.keyNeeded && !models.connected) models.listen(); // it stopped at the 401
    }
  }

  toast(message, kind = "info") {
    const toast = h("div", { class: `toast toast-${kind}` }, message);
    this.toasts.append(toast);
    setTimeout(() => toast.remove(), kind === "error" ? 8000 : 3000);
  }
}

export function applyTheme(theme) {
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

const app = new App();
// For the browser console (and the end-to-end tests): the app and its stores.
window.corral = { app, conversations, generations, models };
app.start();
