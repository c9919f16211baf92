// Small SVG plots for the activity view, drawn here with createElementNS (no library, no CDN):
// line charts over the last hour and one lane per model with its loads, sleeps, evictions and
// crashes. Each spans what it has to show, from a minute up to the hour, so a router started a
// minute ago is not a dot at the right edge.

import { h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 560;
const HEIGHT = 120;
const PAD = { left: 44, right: 8, top: 8, bottom: 18 };
export const HOUR = 3600;
const MINUTE = 60;

/** The seconds a plot spans: since its first point, a minute at least, an hour at most. */
export function spanOf(times, now) {
  const first = Math.min(now, ...times);
  return Math.min(HOUR, Math.max(MINUTE, Math.ceil((now - first) / MINUTE) * MINUTE));
}

function ago(span) {
  return `−${Math.round(span / MINUTE)} min`;
}
const COLOURS = ["#0f766e", "#b45309", "#7c3aed", "#2563eb", "#db2777", "#65a30d", "#475569"];

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) if (child) el.append(child);
  return el;
}

function titled(el, text) {
  el.append(svg("title", {}, document.createTextNode(text)));
  return el;
}

export function colourOf(index) {
  return COLOURS[index % COLOURS.length];
}

// One chart: `series` is [{name, points: [[t, value], …]}], over [now - span, now].
export function lineChart(label, series, now, span, format = (v) => String(Math.round(v))) {
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const max = Math.max(1e-9, ...series.flatMap((s) => s.points.map(([, v]) => v)));
  const x = (t) => PAD.left + innerW * Math.min(1, Math.max(0, 1 - (now - t) / span));
  const y = (v) => PAD.top + innerH * (1 - v / max);
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "plot", role: "img",
    "aria-label": label });
  chart.append(
    svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(0), y2: y(0), class: "plot-axis" }),
    svg("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: y(0), class: "plot-axis" }),
    svg("text", { x: PAD.left - 4, y: PAD.top + 8, class: "plot-label", "text-anchor": "end" },
      document.createTextNode(format(max))),
    svg("text", { x: PAD.left - 4, y: y(0), class: "plot-label", "text-anchor": "end" },
      document.createTextNode("0")),
    svg("text", { x: PAD.left, y: HEIGHT - 4, class: "plot-label" }, document.createTextNode(ago(span))),
    svg("text", { x: WIDTH - PAD.right, y: HEIGHT - 4, class: "plot-label", "text-anchor": "end" },
      document.createTextNode("now")));
  series.forEach((s, index) => {
    if (!s.points.length) return;
    const points = s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    chart.append(titled(svg("polyline", { points, class: "plot-line", stroke: colourOf(index) }),
      `${s.name}: ${format(s.points.at(-1)[1])} now`));
  });
  const legend = h("ul", { class: "plot-legend" }, series.map((s, index) =>
    h("li", {}, h("span", { class: "plot-swatch", style: { background: colourOf(index) } }), s.name)));
  return h("figure", { class: "plot-figure" }, h("figcaption", {}, label), chart, legend);
}

const EVENT_MARKS = {
  load: "plot-mark-load", loaded: "plot-mark-loaded", wake: "plot-mark-loaded",
  sleep: "plot-mark-sleep", evicted: "plot-mark-evicted", unload: "plot-mark-sleep",
  crash: "plot-mark-crash", load_failed: "plot-mark-crash",
};

// One lane per model: a bar while it was loaded (from a load to the next unload, eviction or
// crash) and a mark at each event, over [now - span, now].
export function modelLanes(models, events, now, span) {
  const lane = 22;
  const height = PAD.top + lane * Math.max(1, models.length) + PAD.bottom;
  const innerW = WIDTH - PAD.left - PAD.right - 70;
  const left = PAD.left + 70;
  const x = (t) => left + innerW * Math.min(1, Math.max(0, 1 - (now - t) / span));
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, class: "plot plot-lanes", role: "img",
    "aria-label": "Model timeline" });
  models.forEach((name, row) => {
    const top = PAD.top + row * lane;
    chart.append(svg("text", { x: left - 6, y: top + 15, class: "plot-label", "text-anchor": "end" },
      document.createTextNode(name.length > 18 ? `${name.slice(0, 17)}…` : name)));
    let since = null;
    const mine = events.filter((e) => e.model === name);
    const bar = (from, to) => chart.append(svg("rect", { x: x(from), y: top + 6, height: 10,
      width: Math.max(1, x(to) - x(from)), class: "plot-running", fill: colourOf(row) }));
    for (const event of mine) {
      if (event.kind === "load" && since === null) since = event.at;
      else if (["evicted", "unload", "crash", "load_failed"].includes(event.kind) && since !== null) {
        bar(since, event.at);
        since = null;
      }
    }
    if (since !== null) bar(since, now);
    for (const event of mine) {
      chart.append(titled(svg("circle", { cx: x(event.at), cy: top + 11, r: 4,
        class: `plot-mark ${EVENT_MARKS[event.kind] ?? ""}` }),
      `${event.kind}${event.detail ? `: ${event.detail}` : ""}`));
    }
  });
  chart.append(
    svg("text", { x: left, y: height - 4, class: "plot-label" }, document.createTextNode(ago(span))),
    svg("text", { x: WIDTH - PAD.right, y: height - 4, class: "plot-label", "text-anchor": "end" },
      document.createTextNode("now")));
  return h("figure", { class: "plot-figure" }, h("figcaption", {}, "Models: loads, sleeps, evictions, crashes"), chart);
}
