// Small SVG plots for the activity view, drawn here with createElementNS (no library, no CDN):
// line charts over the last hour and one lane per model with its loads, sleeps, evictions and
// crashes. Each spans what it has to show, from a minute up to the hour, so a router started a
// minute ago is not a dot at the right edge.
//
// Each plot is drawn at the width it is shown (a ResizeObserver draws it again when that
// changes), so its text is the page's 12 px at any width rather than a scaled-down drawing's,
// with 3 or 4 ticks on each axis and light gridlines at them (issue 54).

import { h, replace } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 132;
const PAD = { left: 56, right: 10, top: 10, bottom: 22 };
const TEXT = 12; // px: the page's small size (app.css, .activity)
export const HOUR = 3600;
const MINUTE = 60;

/** The seconds a plot spans: since its first point, a minute at least, an hour at most. */
export function spanOf(times, now) {
  const first = Math.min(now, ...times);
  return Math.min(HOUR, Math.max(MINUTE, Math.ceil((now - first) / MINUTE) * MINUTE));
}

function ago(seconds) {
  if (seconds <= 0) return "now";
  return seconds < 2 * MINUTE ? `−${Math.round(seconds)} s` : `−${Math.round(seconds / MINUTE)} min`;
}
// Models' colours. None is a timeline mark's: those are the page's tones (app.css).
const COLOURS = ["#0f766e", "#b45309", "#7c3aed", "#2563eb", "#db2777", "#65a30d", "#475569"];

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) if (child) el.append(child);
  return el;
}

function text(x, y, content, attrs = {}) {
  return svg("text", { x, y, class: "plot-label", ...attrs }, document.createTextNode(content));
}

function titled(el, content) {
  el.append(svg("title", {}, document.createTextNode(content)));
  return el;
}

export function colourOf(index) {
  return COLOURS[index % COLOURS.length];
}

/** 0 and two or three round steps above it that cover `max` (1, 2 or 5 times a power of
 * ten; whole numbers for counts). */
function ticksUpTo(max, whole) {
  const top = whole ? Math.max(max, 2) : max > 0 ? max : 1; // a small or empty chart's scale
  const rough = top / 3;
  const power = 10 ** Math.floor(Math.log10(rough));
  const round = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
  const step = whole ? Math.max(1, round) : round;
  const count = Math.max(1, Math.ceil(top / step - 1e-9));
  return Array.from({ length: count + 1 }, (_, i) => i * step);
}

/** A figure whose SVG `draw(width)` makes at the width the figure has on the page; its box
 * has the drawing's height from the start, so a drawing never resizes what is observed. */
function sized(caption, height, draw, ...after) {
  const box = h("div", { class: "plot-box", style: { height: `${height}px` } });
  let drawn = 0;
  new ResizeObserver(([entry]) => {
    const width = Math.floor(entry.contentRect.width);
    if (width > 0 && width !== drawn) replace(box, draw((drawn = width)));
  }).observe(box);
  return h("figure", { class: "plot-figure" }, h("figcaption", {}, caption), box, ...after);
}

/** The x axis: four times from −span to now, with light vertical gridlines, below `bottom`. */
function timeAxis(chart, left, right, top, bottom, span) {
  for (let i = 0; i <= 3; i += 1) {
    const x = left + ((right - left) * i) / 3;
    const anchor = i === 0 ? "start" : i === 3 ? "end" : "middle";
    chart.append(svg("line", { x1: x, x2: x, y1: top, y2: bottom, class: "plot-grid" }),
      text(x, bottom + TEXT + 4, ago((span * (3 - i)) / 3), { "text-anchor": anchor }));
  }
}

// One chart: `series` is [{name, points: [[t, value or null], …]}], over [now - span, now]; a
// null (the model had no worker then) breaks its line: a gap is a gap, not a slope.
export function lineChart(label, series, now, span, format) {
  const values = series.flatMap((s) => s.points.map(([, v]) => v)).filter((v) => v != null);
  // Without a format the values are counts; a chart with none yet has no scale to show.
  const ticks = values.length ? ticksUpTo(Math.max(0, ...values), !format) : [0, 1];
  format ??= (v) => String(Math.round(v));
  const top = ticks.at(-1);
  const draw = (width) => {
    const right = width - PAD.right;
    const bottom = HEIGHT - PAD.bottom;
    const x = (t) => PAD.left + (right - PAD.left) * Math.min(1, Math.max(0, 1 - (now - t) / span));
    const y = (v) => bottom - (bottom - PAD.top) * (v / top);
    const chart = svg("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`,
      class: "plot", role: "img", "aria-label": label });
    for (const tick of ticks) {
      chart.append(svg("line", { x1: PAD.left, x2: right, y1: y(tick), y2: y(tick),
        class: tick === 0 ? "plot-axis" : "plot-grid" }),
      text(PAD.left - 6, y(tick) + TEXT / 3, tick === 0 ? "0" : values.length ? format(tick) : "",
        { "text-anchor": "end", class: "plot-label plot-y" }));
    }
    if (!values.length) chart.append(text((PAD.left + right) / 2, (PAD.top + bottom) / 2, "no samples yet",
      { "text-anchor": "middle" }));
    timeAxis(chart, PAD.left, right, PAD.top, bottom, span);
    series.forEach((s, index) => {
      const runs = [[]];
      for (const [t, v] of s.points) {
        if (v == null) runs.push([]);
        else runs.at(-1).push([x(t), y(v)]);
      }
      const last = s.points.filter(([, v]) => v != null).at(-1);
      const note = `${s.name}: ${last ? format(last[1]) : "—"} at the last sample`;
      for (const run of runs.filter((r) => r.length)) {
        const mark = run.length === 1 // a lone sample: a dot, as a line needs two
          ? svg("circle", { cx: run[0][0], cy: run[0][1], r: 2.5, fill: colourOf(index) })
          : svg("polyline", { points: run.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" "),
            class: "plot-line", stroke: colourOf(index) });
        chart.append(titled(mark, note));
      }
    });
    return chart;
  };
  const legend = h("ul", { class: "plot-legend" }, series.map((s, index) =>
    h("li", { title: s.name }, h("span", { class: "plot-swatch", style: { background: colourOf(index) } }),
      h("span", { class: "plot-legend-name" }, s.name))));
  return sized(label, HEIGHT, draw, legend);
}

// The timeline's marks, each in one of the page's tones; the key under the lanes names them.
const EVENT_MARKS = {
  load: "plot-mark-load", loaded: "plot-mark-loaded", wake: "plot-mark-loaded",
  sleep: "plot-mark-sleep", evicted: "plot-mark-evicted", unload: "plot-mark-sleep",
  crash: "plot-mark-crash", load_failed: "plot-mark-crash",
};
const MARK_KEY = [["plot-mark-load", "load began"], ["plot-mark-loaded", "loaded or woke"],
  ["plot-mark-sleep", "slept or unloaded"], ["plot-mark-evicted", "evicted for another model"],
  ["plot-mark-crash", "crashed or failed to load"]];

function markKey() {
  return h("ul", { class: "plot-legend plot-key", "aria-label": "Timeline marks" },
    MARK_KEY.map(([mark, meaning]) => h("li", { dataset: { mark } },
      svg("svg", { width: 12, height: 12, viewBox: "0 0 12 12", "aria-hidden": "true" },
        svg("circle", { cx: 6, cy: 6, r: 4.5, class: `plot-mark ${mark}` })), meaning)));
}

// One lane per model: a bar while it was loaded (from a load to the next unload, eviction or
// crash) and a mark at each event, over [now - span, now].
export function modelLanes(models, events, now, span) {
  const lane = 24;
  const height = PAD.top + lane * Math.max(1, models.length) + PAD.bottom;
  const draw = (width) => {
    const names = Math.min(180, Math.round(width * 0.3)); // the names' column
    const left = names + 8;
    const right = width - PAD.right;
    const x = (t) => left + (right - left) * Math.min(1, Math.max(0, 1 - (now - t) / span));
    const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`,
      class: "plot plot-lanes", role: "img", "aria-label": "Model timeline" });
    timeAxis(chart, left, right, PAD.top, height - PAD.bottom, span);
    const fits = Math.max(4, Math.floor(names / (TEXT * 0.7))); // a wide letter's width
    models.forEach((name, row) => {
      const top = PAD.top + row * lane;
      chart.append(titled(text(0, top + 16, name.length > fits ? `${name.slice(0, fits - 1)}…` : name),
        name));
      let since = null;
      const mine = events.filter((e) => e.model === name);
      const bar = (from, to) => chart.append(svg("rect", { x: x(from), y: top + 7, height: 10,
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
        chart.append(titled(svg("circle", { cx: x(event.at), cy: top + 12, r: 4.5,
          class: `plot-mark ${EVENT_MARKS[event.kind] ?? ""}` }),
        `${name} ${event.kind}${event.detail ? `: ${event.detail}` : ""}`));
      }
    });
    return chart;
  };
  return sized("Models: loads, sleeps, evictions, crashes", height, draw, markKey());
}
