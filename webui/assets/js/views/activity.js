// The activity view (#/activity): what the box is doing now, live from GET /activity/sse. The
// requests in flight and the last few hundred finished with their states, each model's loads,
// sleeps, evictions and crashes, and plots of the last hour (tokens/s per model, queue depth,
// memory per model and per device). An inference key sees only its own requests.

import { api, errorOf, readEvents, sleep } from "../api.js";
import { h, iconButton, replace } from "../dom.js";
import { formatBytes, formatNumber } from "../format.js";
import { HOUR, lineChart, modelLanes, spanOf } from "./plots.js";

const RETRY_MS = 2000;
const SHOWN_FINISHED = 100; // finished requests in the table; the router keeps more
const STATE_TONES = { queued: "idle", loading: "busy", restoring: "busy", prompt: "busy",
  generating: "ok", done: "off", failed: "bad" };

function seconds(value) {
  return value === null || value === undefined ? "" : `${value.toFixed(value < 10 ? 2 : 1)} s`;
}

function tokensPerSecond(record) {
  return typeof record.tokens_per_s === "number" ? record.tokens_per_s.toFixed(1) : "";
}

// The first piece of a streamed answer is its first token; an answer sent in one piece has no
// first token, only the time to the whole answer, which the cell says (issue 54).
function firstPiece(record) {
  if (record.stream) return seconds(record.first_token ? record.first_token - record.received : null);
  return record.ended ? `answer ${seconds(record.ended - record.received)}` : "";
}

// A cell cut with an ellipsis where the column is narrow; its whole text on hover.
function cut(text, className = "") {
  return h("td", { class: `cut ${className}`, title: text }, text);
}

// The table's columns: their names and classes; app.css sizes them and, where the table is
// narrow, hides the "wide" ones, then the "mid" ones, then the "first" token's.
const COLUMNS = [["Model", "col-model"], ["State", "col-state"], ["Key", "col-key col-wide"],
  ["Class", "col-class col-wide"], ["Wait", "col-wait col-mid"], ["First token", "col-first"],
  ["Tokens/s", "col-speed"], ["Cached", "col-cached col-wide"],
  ["Generated", "col-generated col-mid"], ["Status", "col-status col-wide"],
  ["Route", "col-route col-mid"]];

function requestRow(record, now) {
  const waited = (record.dispatched ?? record.ended ?? now) - record.received;
  const [model, state, key, klass, wait, first, speed, cached, generated, status, route] =
    COLUMNS.map(([, className]) => className);
  return h("tr", { dataset: { id: record.id, state: record.state, model: record.model } },
    cut(record.model, model),
    h("td", { class: state }, h("span", { class: `badge badge-${STATE_TONES[record.state] ?? "off"} request-state` },
      h("span", { class: "dot", "aria-hidden": "true" }), record.state)),
    cut(record.key_id ?? "—", `muted ${key}`),
    cut(record.klass, `muted ${klass}`),
    h("td", { class: `num ${wait}` }, seconds(waited)),
    h("td", { class: `num ${first}`, dataset: { stream: String(record.stream) } }, firstPiece(record)),
    h("td", { class: `num ${speed}` }, tokensPerSecond(record)),
    h("td", { class: `num ${cached}` }, record.cached_tokens ?? ""),
    h("td", { class: `num ${generated}` }, record.completion_tokens ?? ""),
    h("td", { class: `num ${status}` }, record.status ?? ""),
    cut(record.route, `muted ${route}`));
}

// Each name's values, one point per sample: null where a sample does not have it (a model with
// no worker then), which the chart draws as a gap.
function series(samples, pick) {
  const names = new Set();
  for (const sample of samples) for (const name of Object.keys(pick(sample))) names.add(name);
  return [...names].sort().map((name) => ({
    name,
    points: samples.map((s) => [s.at, pick(s)[name] ?? null]),
  }));
}

function modelMemory(sample) {
  const out = {};
  for (const [name, model] of Object.entries(sample.models)) {
    if (model.ram != null) out[`${name} RAM`] = model.ram;
    if (model.vram != null) out[`${name} VRAM`] = model.vram;
  }
  return out;
}

export class ActivityView {
  constructor(app) {
    this.app = app;
    this.samples = [];
    this.abort = new AbortController();
    this.state = h("span", { class: "muted activity-state", role: "status" }, "connecting…");
    this.models = h("ul", { class: "gpu-list activity-models", "aria-label": "Models now" });
    this.rows = h("tbody");
    this.events = h("ol", { class: "activity-events", "aria-label": "Model events" });
    this.lanes = h("div", { class: "activity-lanes" });
    this.plots = h("div", { class: "activity-plots" });
    this.el = h("section", { class: "manager activity" },
      h("header", { class: "topbar" },
        iconButton("menu", "Show conversations", () => app.toggleSidebar(), { class: "icon-btn only-narrow" }),
        h("h1", { class: "topbar-title" }, "Activity"),
        this.state),
      h("div", { class: "manager-scroll" },
        h("div", { class: "manager-body activity-body" },
          h("section", { class: "card" }, h("h2", {}, "Models and memory"), this.models),
          h("section", { class: "card" }, h("h2", {}, "Requests"),
            h("div", { class: "activity-table-wrap" },
              h("table", { class: "activity-table", "aria-label": "Requests" },
                h("thead", {}, h("tr", {}, COLUMNS.map(([name, className]) =>
                  h("th", { class: className }, name)))), this.rows))),
          h("section", { class: "card" }, h("h2", {}, "Timeline"), this.lanes, this.events),
          h("section", { class: "card" }, h("h2", {}, "The last hour"), this.plots))));
    this.listen();
  }

  destroy() {
    this.abort.abort();
  }

  focus() {}

  async listen() {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        const response = await api("./activity/sse", { signal });
        if (!response.ok) throw await errorOf(response);
        this.state.textContent = "live";
        await readEvents(response, 0, (data) => this.render(JSON.parse(data)));
      } catch (error) {
        if (signal.aborted) return;
        this.state.textContent = error?.status === 401 ? "key needed" : "reconnecting…";
      }
      await sleep(RETRY_MS, signal).catch(() => {});
    }
  }

  render(snapshot) {
    const now = snapshot.now;
    if (snapshot.samples) this.samples = snapshot.samples;
    replace(this.models, snapshot.models.map((model) => h("li", { dataset: { model: model.name, status: model.status } },
      h("strong", { class: "cut", title: model.name }, model.name),
      h("span", {}, model.status,
        model.node && !model.replicas ? ` · node ${model.node}` : "",
        ...(model.replicas ?? []).map((copy) => h("span", { class: "activity-copy", dataset: { copy: copy.copy } },
          ` · copy ${copy.copy} ${copy.status}`, copy.node ? ` on node ${copy.node}` : "")),
        model.in_flight ? ` · ${formatNumber(model.in_flight)} in flight` : "",
        model.ram != null ? ` · RAM ${formatBytes(model.ram)}` : "",
        model.vram != null ? ` · VRAM ${formatBytes(model.vram)}` : ""))),
    Object.entries(snapshot.devices).map(([name, device]) => h("li", { dataset: { device: name } },
      h("strong", { class: "cut", title: name }, name),
      h("span", {}, `${formatBytes(device.used)} of ${formatBytes(device.total)} used`))));
    const live = snapshot.requests.filter((r) => r.ended === null || r.ended === undefined);
    const done = snapshot.requests.filter((r) => r.ended != null).slice(0, SHOWN_FINISHED);
    replace(this.rows, [...live, ...done].map((record) => requestRow(record, now)));
    const recent = snapshot.events.filter((e) => e.at > now - HOUR);
    const names = snapshot.models.map((m) => m.name)
      .filter((name) => recent.some((e) => e.model === name) || live.some((r) => r.model === name));
    replace(this.lanes, modelLanes(names, recent, now, spanOf(recent.map((e) => e.at), now)));
    replace(this.events, recent.slice(-12).reverse().map((event) =>
      h("li", { dataset: { kind: event.kind, model: event.model } },
        h("time", {}, new Date(event.at * 1000).toLocaleTimeString()), " ",
        h("strong", { class: "cut", title: event.model }, event.model), " ", event.kind,
        event.detail ? `: ${event.detail}` : "")));
    const samples = this.samples.filter((s) => s.at > now - HOUR);
    const span = spanOf(samples.map((s) => s.at), now);
    replace(this.plots,
      lineChart("Tokens/s per model", series(samples, (s) => Object.fromEntries(
        Object.entries(s.models).map(([name, m]) => [name, m.tokens_per_s ?? 0]))), now, span,
      (v) => v.toFixed(1)),
      lineChart("Queue depth", [{ name: "waiting", points: samples.map((s) => [s.at, s.queue]) },
        { name: "in flight", points: samples.map((s) => [s.at, s.in_flight]) }], now, span),
      lineChart("Memory per model", series(samples, modelMemory), now, span, formatBytes),
      lineChart("Memory per device (used)", series(samples, (s) => Object.fromEntries(
        Object.entries(s.devices).map(([name, d]) => [name, d.used]))), now, span, formatBytes));
  }
}
