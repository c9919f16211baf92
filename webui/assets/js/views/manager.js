// The model manager (#/models): download from the hub, load, unload and delete models, with
// live status, memory per running model and the scheduler's pins and TTLs.

import { h, icon, iconButton, KeyedList } from "../dom.js";
import { formatBytes, formatNumber, formatSeconds, percent, plural, prefixed } from "../format.js";
import { contextSize, fileSize, models, status } from "../models.js";
import { confirmDialog } from "./dialogs.js";
import { failureOf, progressBar, setProgress, statusBadge } from "./status.js";

// Memory use changes without events, so the list is refreshed while this view is open.
const MEMORY_REFRESH_MS = 5000;
const REPO_PATTERN = /^[\w.-]+\/[\w.-]+(?::[\w.-]+)?$/;

function isRunning(entry) {
  return ["loaded", "loading", "sleeping"].includes(status(entry));
}

export class ManagerView {
  constructor(app) {
    this.app = app;
    this.busy = new Set(); // model ids with an action in flight
    this.repo = h("input", {
      class: "input", name: "repo", placeholder: "org/repo[:TAG], e.g. ggml-org/gemma-3-1b-it-GGUF:Q4_K_M",
      "aria-label": "Hugging Face repository", autocomplete: "off", spellcheck: false,
    });
    this.downloadError = h("p", { class: "form-error", role: "alert", hidden: true });
    const form = h("form", { class: "download-form", onSubmit: (event) => {
      event.preventDefault();
      this.download();
    } },
    this.repo,
    h("button", { type: "submit", class: "btn btn-primary" }, icon("download"), "Download"));
    this.downloads = h("div", { class: "downloads", "aria-label": "Downloads" });
    this.list = h("div", { class: "model-list", "aria-label": "Models" });
    this.downloadRows = new KeyedList(this.downloads);
    this.modelRows = new KeyedList(this.list);
    this.summary = h("p", { class: "muted manager-summary" });
    // Each GPU's memory as its driver says now (the router's NVML reading): Corral's models and
    // anything else on it. Hidden on a machine without GPUs.
    this.gpus = h("ul", { class: "gpu-list", "aria-label": "GPUs" });
    // Hidden for an inference key, which the router refuses these actions (403).
    this.reloadButton = h("button", { type: "button", class: "btn btn-small",
      title: "Re-read the model sources (GET /models?reload=1)", onClick: () => this.reload() },
    icon("refresh"), "Reload list");
    // Says why an inference key sees no Download, Load or Unload (docs/security.md, key scopes),
    // rather than leaving them missing without a word.
    this.scopeNote = h("p", { class: "card manage-note", role: "note", hidden: true },
      "Downloading, loading and unloading models need an admin key; this page's key is an "
      + "inference key, which may chat with any model (a model loads for its first message).");
    this.downloadCard = h("section", { class: "card" },
      h("h2", {}, "Download from Hugging Face"),
      h("p", { class: "muted" }, "The file for the tag is chosen as llama.cpp does "
        + "(Q4_K_M when no tag is given) and lands in the shared hub cache."),
      form, this.downloadError, this.downloads);
    this.el = h("section", { class: "manager" },
      h("header", { class: "topbar" },
        iconButton("menu", "Show conversations", () => app.toggleSidebar(), { class: "icon-btn only-narrow" }),
        h("h1", { class: "topbar-title" }, "Models"),
        this.reloadButton),
      h("div", { class: "manager-scroll" },
        h("div", { class: "manager-body" },
          this.scopeNote,
          this.downloadCard,
          h("section", { class: "card" },
            h("div", { class: "card-head" }, h("h2", {}, "Models"), this.summary),
            this.gpus,
            this.list))));
    this.onChange = () => this.render();
    models.addEventListener("change", this.onChange);
    this.timer = setInterval(() => models.refresh().catch(() => {}), MEMORY_REFRESH_MS);
    models.refresh().catch(() => {});
    this.render();
  }

  destroy() {
    models.removeEventListener("change", this.onChange);
    clearInterval(this.timer);
  }

  focus() {
    this.repo.focus();
  }

  async act(id, action, failure) {
    this.busy.add(id);
    this.render();
    try {
      await action();
    } catch (error) {
      this.app.toast(prefixed(failure, error.message), "error");
    } finally {
      this.busy.delete(id);
      this.render();
    }
  }

  async download() {
    const name = this.repo.value.trim();
    this.downloadError.hidden = true;
    if (!REPO_PATTERN.test(name)) {
      this.downloadError.textContent = "Give a repository as org/repo, optionally with :TAG.";
      this.downloadError.hidden = false;
      return;
    }
    try {
      await models.download(name);
      this.repo.value = "";
    } catch (error) {
      this.downloadError.textContent = error.message;
      this.downloadError.hidden = false;
    }
  }

  async reload() {
    await this.act("*", () => models.reload(), "Reload failed");
  }

  async remove(entry) {
    const ok = await confirmDialog({
      title: `Delete ${entry.id}?`,
      message: "Its files are removed from the hub cache (a running model is stopped first). "
        + "This cannot be undone.",
      confirm: "Delete",
      danger: true,
    });
    if (ok) await this.act(entry.id, () => models.remove(entry.id), `Could not delete ${entry.id}`);
  }

  render() {
    this.reloadButton.hidden = !models.canManage;
    this.downloadCard.hidden = !models.canManage;
    this.scopeNote.hidden = models.canManage;
    this.renderDownloads();
    const entries = models.models();
    const running = entries.filter((entry) => isRunning(entry));
    const memory = running.reduce((sum, entry) => sum + (entry.replicas // all its copies
      ? entry.replicas.reduce((held, copy) => held + (copy.rss ?? 0), 0) : entry.memory?.rss ?? 0), 0);
    const max = models.props?.max_instances;
    this.summary.textContent = `${plural(entries.length, "model")} · ${running.length} running`
      + (max > 0 ? ` (at most ${max})` : "")
      + (memory ? ` · ${formatBytes(memory)} resident` : "");
    this.renderGpus();
    const empty = h("p", { class: "muted" },
      models.loaded ? "No models yet: download one above." : "Loading…");
    this.modelRows.render(entries.map((entry) => ({
      key: entry.id,
      signature: JSON.stringify([entry.status, entry.node, entry.replicas, entry.memory, entry.placement, fileSize(entry), models.measured.get(entry.id),
        entry.pinned, entry.ttl, entry.aliases, models.loading.get(entry.id), this.busy.has(entry.id),
        models.canManage]),
      build: () => this.modelRow(entry),
    })), empty);
  }

  renderDownloads() {
    this.downloadRows.render([...models.downloads.entries()].map(([name, item]) => ({
      key: name,
      // finishedAs too: a list refresh may mark a download finished before its event names the
      // model it became, and the row's Chat button must open that model, not the name asked.
      signature: `${item.state} ${item.finishedAs ?? ""}`,
      build: () => this.downloadRow(name, item),
      update: (el) => this.updateDownload(el, name, item),
    })));
  }

  downloadRow(name, item) {
    const finished = item.state === "finished";
    const failed = item.state === "failed";
    const button = (label, iconName, onClick) => h("button", {
      type: "button", class: "btn btn-small", onClick, dataset: { focusKey: `${label}:${name}` },
    }, icon(iconName), label);
    return h("div", { class: `download download-${item.state}`, dataset: { model: name } },
      h("div", { class: "download-head" },
        h("span", { class: "download-name" }, name),
        h("span", { class: "download-detail" })),
      progressBar(null, `Download of ${name}`),
      failed ? h("p", { class: "form-error" }, item.error ?? "The download failed.") : null,
      h("div", { class: "download-actions" },
        item.state === "downloading" ? button("Cancel", "x",
          () => this.act(name, () => models.cancelDownload(name), "Cancel failed")) : null,
        finished ? button("Chat", "chat", () => this.app.newChatWith(item.finishedAs ?? name)) : null,
        failed ? button("Retry", "refresh",
          () => this.act(name, () => models.retryDownload(name), "Retry failed")) : null,
        finished || failed ? button("Dismiss", "x", () => models.dismissDownload(name)) : null));
  }

  // Progress changes ten times a second: patched in place, the row itself stays.
  updateDownload(el, name, item) {
    const finished = item.state === "finished";
    const fraction = finished ? 1 : item.total ? item.done / item.total : null;
    let detail = item.total ? `${percent(fraction)} · ${formatBytes(item.done)} of ${formatBytes(item.total)}`
      : "starting…";
    if (finished) detail = `done: ${item.finishedAs ?? name}`;
    if (item.state === "failed") detail = "failed";
    if (item.state === "cancelled") detail = "cancelling…";
    el.querySelector(".download-detail").textContent = detail;
    setProgress(el.querySelector("[role=progressbar]"), item.state === "failed" ? fraction ?? 0 : fraction);
  }
  renderGpus() {
    this.gpus.hidden = !models.devices.length;
    this.gpus.replaceChildren(...models.devices.map((device) => h("li", { class: "gpu" },
      h("span", { class: "gpu-name", title: device.description }, device.name),
      h("meter", { class: "gpu-meter", min: 0, max: device.total, value: device.used,
        "aria-label": `${device.name} memory used` }),
      h("span", { class: "gpu-use muted" },
        `${formatBytes(device.used)} of ${formatBytes(device.total)} used · ${formatBytes(device.free)} free`))));
  }

  modelRow(entry) {
    const value = status(entry);
    const busy = this.busy.has(entry.id);
    const runningNow = isRunning(entry);
    const key = (label) => ({ focusKey: `${label}:${entry.id}` });
    const facts = [];
    facts.push(h("span", { class: "fact" }, entry.source === "cache" ? "hub cache"
      : entry.source === "models_dir" ? "models dir" : entry.source ?? "?"));
    const size = fileSize(entry);
    if (size) facts.push(h("span", { class: "fact fact-size", title: "Size of its files" }, formatBytes(size)));
    // With --cluster only: a single box's entries carry no node.
    if (entry.node && runningNow && !entry.replicas) { // with replicas: per copy, below
      facts.push(h("span", { class: "fact fact-node", title: "The cluster node its worker runs on" },
        `node ${entry.node}`));
    }
    // A model with replicas: each worker copy, its state and (with --cluster) its node.
    for (const copy of entry.replicas ?? []) {
      facts.push(h("span", { class: "fact fact-copy", dataset: { copy: copy.copy, status: copy.status },
        title: "A worker copy of the model (replicas)" },
      `copy ${copy.copy}: ${copy.status}`, copy.node ? ` · node ${copy.node}` : "",
      copy.rss ? ` · ${formatBytes(copy.rss)} RAM` : ""));
    }
    const ctx = contextSize(entry);
    if (ctx && runningNow) facts.push(h("span", { class: "fact" }, `context ${formatNumber(ctx)}`));
    if (entry.memory?.rss && runningNow && !entry.replicas) { // with replicas: per copy
      facts.push(h("span", { class: "fact fact-memory", title: "Resident memory of its worker" },
        `${formatBytes(entry.memory.rss)} RAM`));
    } else if (!runningNow && models.measured.get(entry.id)) {
      facts.push(h("span", { class: "fact fact-memory-last", title: "The most its worker held when it last ran (seen by this browser)" },
        `${formatBytes(models.measured.get(entry.id))} RAM when run`));
    }
    if (entry.memory?.vram && runningNow) {
      const split = Object.entries(entry.memory.devices ?? {})
        .map(([name, size]) => `${name}: ${formatBytes(size)}`).join(", ");
      facts.push(h("span", { class: "fact fact-vram", title: `GPU memory its worker holds (${split})` },
        `${formatBytes(entry.memory.vram)} VRAM`));
    }
    if (entry.placement?.fits === false && runningNow) {
      facts.push(h("span", { class: "fact fact-spill",
        title: "It fits on no GPU: llama.cpp keeps what fits there and runs the rest on the CPU" },
      "partly on CPU"));
    }
    if (entry.pinned) {
      facts.push(h("span", { class: "fact fact-pin", title: "Pinned: never evicted for another model" },
        icon("pin"), "pinned"));
    }
    if (entry.ttl) {
      facts.push(h("span", { class: "fact fact-ttl", title: "Unloaded after this long without requests" },
        icon("clock"), `TTL ${formatSeconds(entry.ttl)}`));
    }
    if (entry.aliases?.length) facts.push(h("span", { class: "fact" }, `aliases: ${entry.aliases.join(", ")}`));
    const failure = failureOf(entry);
    const actions = [];
    const manage = models.canManage; // an inference key may only chat
    if (manage && runningNow) {
      actions.push(h("button", { type: "button", class: "btn btn-small", disabled: busy,
        dataset: key("unload"),
        onClick: () => this.act(entry.id, () => models.unload(entry.id), `Could not unload ${entry.id}`) },
      icon("power"), "Unload"));
    } else if (manage) {
      actions.push(h("button", { type: "button", class: "btn btn-small", disabled: busy,
        dataset: key("load"),
        onClick: () => this.act(entry.id, () => models.load(entry.id), `Could not load ${entry.id}`) },
      icon("play"), "Load"));
    }
    actions.push(h("button", { type: "button", class: "btn btn-small", dataset: key("chat"),
      onClick: () => this.app.newChatWith(entry.id) }, icon("chat"), "Chat"));
    if (entry.can_remove && manage) {
      actions.push(h("button", { type: "button", class: "btn btn-small btn-danger-quiet", disabled: busy,
        dataset: key("delete"), onClick: () => this.remove(entry), "aria-label": `Delete ${entry.id}` }, icon("trash"), "Delete"));
    }
    return h("article", { class: "model-row", dataset: { model: entry.id, status: value } },
      h("div", { class: "model-main" },
        h("div", { class: "model-title" }, h("span", { class: "model-name" }, entry.id), statusBadge(entry)),
        h("div", { class: "model-facts" }, facts),
        value === "loading" ? progressBar(models.loading.get(entry.id) ?? null, `Loading ${entry.id}`) : null,
        failure && value === "unloaded" ? h("p", { class: "form-error" }, failure) : null),
      h("div", { class: "model-actions" }, actions));
  }
}
