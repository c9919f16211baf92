// The router's models: the list from GET /v1/models, kept live by GET /models/sse.
//
// As llama.cpp's own UI does, the list is fetched on demand (at start, after models_reload,
// model_remove and download_finished events, and when a model ends up loaded or unloaded, to
// pick up its meta, memory and failure reason) and never polled; statuses, load progress and
// download progress between fetches come from the events. The model manager refreshes while
// it is open, since memory use changes without events.

import { api, apiJson, readEvents, sleep } from "./api.js";

const RECONNECT_MS = [1000, 2000, 5000];
// The most each model was seen to hold while it ran, kept in this browser: /models only tells
// the memory of running models, and the manager shows it after an unload too.
const MEMORY_STORAGE = "corral.memory";

function readMemory() {
  try {
    const saved = JSON.parse(localStorage.getItem(MEMORY_STORAGE) ?? "{}");
    return new Map(Object.entries(saved).filter(([, bytes]) => Number.isFinite(bytes)));
  } catch {
    return new Map();
  }
}
// Download entries share GET /models with models; these statuses mark them.
const DOWNLOAD_STATUSES = new Set(["downloading", "downloaded"]);

class ModelStore extends EventTarget {
  constructor() {
    super();
    this.entries = new Map(); // id -> /v1/models entry
    this.loading = new Map(); // id -> load progress 0..1 (absent: unknown)
    this.downloads = new Map(); // name as asked -> { done, total, state, error, finishedAs }
    this.dismissed = new Set(); // failed downloads the user has closed (listed until a reload)
    this.props = null; // router GET /props
    this.access = null; // GET /v1/key: { scope, key_id, concurrency, rpm, tools } of this page's key
    // The first answer of /v1/key (null if none came): what waits to know whether tools are on.
    this.accessKnown = new Promise((resolve) => (this.accessArrived = resolve));
    this.loaded = false; // the first list has arrived
    this.connected = false; // the event stream is open
    this.keyNeeded = false; // the server answered, but only 401: no (valid) API key yet
    this.refreshTimer = null;
    this.measured = readMemory(); // id -> the most resident bytes seen while it ran
    this.devices = []; // the GPUs the router sees: { name, description, total, free, used }
  }

  /** Models one can chat with: everything but download entries. */
  models() {
    return [...this.entries.values()].filter((entry) => !DOWNLOAD_STATUSES.has(status(entry)));
  }

  get(id) {
    const entry = this.entries.get(id);
    if (entry) return entry;
    return [...this.entries.values()].find((item) => item.aliases?.includes(id)) ?? null;
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  /** False for an inference key: the router answers 403 to its model management. */
  get canManage() {
    return this.access?.scope !== "inference";
  }

  // Asked again whenever the key changes: the scope belongs to the key, not to the server.
  async refreshAccess() {
    this.access = await apiJson("./v1/key").catch(() => null);
    this.accessArrived(this.access);
    this.changed();
  }

  async start() {
    this.props = await apiJson("./props").catch(() => null);
    await this.refreshAccess();
    try {
      await this.refresh();
    } catch (error) {
      this.keyNeeded = error?.status === 401;
      this.changed();
      throw error;
    }
    this.keyNeeded = false;
    this.listen();
  }

  async refresh() {
    const body = await apiJson("./v1/models");
    this.entries = new Map(body.data.map((entry) => [entry.id, entry]));
    this.devices = body.devices ?? [];
    this.remember(body.data);
    for (const entry of body.data) {
      if (status(entry) !== "loading") this.loading.delete(entry.id);
      if (DOWNLOAD_STATUSES.has(status(entry))) this.trackDownload(entry);
    }
    this.loaded = true;
    this.changed();
  }

  remember(entries) {
    let changed = false;
    for (const entry of entries) {
      const rss = entry.memory?.rss;
      if (rss && rss > (this.measured.get(entry.id) ?? 0)) {
        this.measured.set(entry.id, rss);
        changed = true;
      }
    }
    if (changed) localStorage.setItem(MEMORY_STORAGE, JSON.stringify(Object.fromEntries(this.measured)));
  }

  // Coalesce the refreshes a burst of events asks for.
  refreshSoon() {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => this.refresh().catch(() => {}), 150);
  }

  trackDownload(entry) {
    if (this.dismissed.has(entry.id)) return;
    const known = this.downloads.get(entry.id) ?? { done: 0, total: 0, state: "downloading" };
    const totals = sumProgress(entry.status.progress);
    const failed = entry.status.failed;
    let state = known.state;
    if (failed && state !== "cancelled") state = "failed";
    else if (status(entry) === "downloaded" && state === "downloading") state = "finished";
    this.downloads.set(entry.id, {
      ...known,
      ...(totals.total ? totals : {}),
      state,
      error: failed ? entry.status.error : known.error,
    });
  }

  /** Follow GET /models/sse for as long as the page lives, reconnecting after a failure. */
  async listen() {
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await api("./models/sse");
        if (response.ok) {
          if (attempt > 0) this.refreshSoon(); // events may have been missed meanwhile
          attempt = 0;
          this.connected = true;
          this.keyNeeded = false; // a key the dialog asked for (main.js) works
          this.changed();
          await readEvents(response, 0, (data) => this.onEvent(JSON.parse(data)));
        }
      } catch (error) {
        if (error?.status === 401) {
          // No key given: stay quiet until one is entered (main.js connects again then).
          this.keyNeeded = true;
          this.connected = false;
          this.changed();
          return;
        }
      }
      this.connected = false;
      this.changed();
      await sleep(RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]);
    }
  }

  onEvent({ model, event, data = {} }) {
    const payload = data ?? {};
    switch (event) {
      case "model_status":
      case "status_change":
        this.onStatus(model, payload);
        break;
      case "download_progress": {
        const known = this.downloads.get(model) ?? { state: "downloading" };
        this.downloads.set(model, { ...known, ...sumProgress(payload.progress) });
        break;
      }
      case "download_finished": {
        const known = this.downloads.get(model) ?? {};
        const done = Math.max(known.done ?? 0, known.total ?? 0);
        this.downloads.set(model, {
          ...known, done, total: done, state: "finished", finishedAs: payload.id ?? model,
        });
        this.refreshSoon();
        break;
      }
      case "download_failed": {
        const known = this.downloads.get(model) ?? {};
        if (known.state !== "cancelled") {
          this.downloads.set(model, { ...known, state: "failed", error: payload.error });
        }
        this.refreshSoon();
        break;
      }
      case "model_remove":
      case "models_reload":
        this.refreshSoon();
        break;
      default:
        return;
    }
    this.changed();
  }

  onStatus(model, payload) {
    const value = payload.status;
    if (value === "downloading" && !this.downloads.has(model)) {
      this.dismissed.delete(model);
      this.downloads.set(model, { done: 0, total: 0, state: "downloading" });
    }
    const entry = this.entries.get(model);
    if (!entry) {
      this.refreshSoon(); // a model (or download) this page has not listed yet
    } else {
      const next = { ...entry.status, value };
      if (value === "loading") {
        delete next.failed;
        delete next.error;
        delete next.exit_code;
      }
      if (value === "unloaded" && payload.exit_code) {
        next.failed = true;
        next.exit_code = payload.exit_code;
        if (payload.error) next.error = payload.error; // the router sends the reason along
      }
      this.entries.set(model, { ...entry, status: next });
    }
    // Without a progress value (the worker has not started reading weights yet) the bars
    // stay indeterminate rather than claiming 0%.
    if (value === "loading" && typeof payload.progress?.value === "number") {
      this.loading.set(model, payload.progress.value);
    } else if (value !== "loading") {
      this.loading.delete(model);
    }
    // Loaded: meta (context size) and memory; unloaded: the failure reason; both only in the list.
    if (value === "loaded" || value === "unloaded" || value === "downloaded") this.refreshSoon();
  }

  // --- actions ------------------------------------------------------------------------------

  async load(id) {
    try {
      await apiJson("./models/load", { method: "POST", json: { model: id } });
    } catch (error) {
      if (!/already running/.test(error.message)) throw error;
    }
  }

  unload(id) {
    return apiJson("./models/unload", { method: "POST", json: { model: id } });
  }

  async download(name) {
    await apiJson("./models", { method: "POST", json: { model: name } });
    await this.refresh();
  }

  async cancelDownload(name) {
    const known = this.downloads.get(name) ?? {};
    this.downloads.set(name, { ...known, state: "cancelled" });
    this.changed();
    await apiJson("./models/unload", { method: "POST", json: { model: name } });
    this.downloads.delete(name);
    await this.refresh();
  }

  /**
   * Start a failed download again under the same name. The hub cache keeps the part already
   * fetched, so the new download resumes from there.
   */
  async retryDownload(name) {
    this.dismissed.delete(name);
    // Set before the request, so the new download's events update this row.
    this.downloads.set(name, { done: 0, total: 0, state: "downloading" });
    this.changed();
    try {
      await apiJson("./models", { method: "POST", json: { model: name } });
    } catch (error) {
      this.downloads.set(name, { done: 0, total: 0, state: "failed", error: error.message });
      this.changed();
      throw error;
    }
    await this.refresh();
  }

  dismissDownload(name) {
    if (this.downloads.get(name)?.state === "failed") this.dismissed.add(name);
    this.downloads.delete(name);
    this.changed();
  }

  async remove(id) {
    await apiJson(`./models?model=${encodeURIComponent(id)}`, { method: "DELETE" });
    await this.refresh();
  }

  async reload() {
    await apiJson("./v1/models?reload=1");
    await this.refresh();
  }
}

/** The bytes of a model's files: the router's `size`, else the running worker's meta. */
export function fileSize(entry) {
  return entry?.size || entry?.meta?.size || null;
}

export function status(entry) {
  return entry?.status?.value ?? "unknown";
}

/** n_ctx of one slot: what a single conversation can use. */
export function contextSize(entry) {
  const meta = entry?.meta ?? {};
  return meta.n_ctx_slot ?? meta.n_ctx ?? null;
}

function sumProgress(progress) {
  let done = 0;
  let total = 0;
  for (const item of Object.values(progress ?? {})) {
    done += item.done ?? 0;
    total += item.total ?? 0;
  }
  return { done, total };
}

export const models = new ModelStore();
