// Line charts on uPlot (vendored, /static/vendor/uplot): one Chart per metric, several runs per chart.
//
// What this file adds to uPlot: x-axis modes (step, wall time, relative time, another metric), smoothing,
// per-chart log scale, run overlays joined on x, group bands (mean with min–max), finding markers with
// tooltips, a healthy band from the metric guide, NaN/Inf markers, and a SyncGroup that shares the
// crosshair (uPlot's cursor sync) and the zoomed x-range across every chart of a page.
// Drag on a chart zooms the whole page, Ctrl/⌘ + wheel zooms around the pointer, Shift + drag pans;
// double-click resets.

import { cssVar, el, fmtDuration, fmtNum, fmtTime, hideTip, showTip } from "./core.js";
import { t } from "./i18n.js";
import { smooth } from "./smooth.js";

const U = window.uPlot;
let groupSeq = 0;

/** Charts that share a crosshair and an x-range. */
export class SyncGroup {
  constructor() {
    this.key = "rlc-sync-" + (++groupSeq);
    this.charts = new Set();
    this.range = null;
    this.onChange = [];
  }
  zoom(min, max) {
    if (!(max > min)) return;
    this.range = { min, max };
    for (const c of this.charts) c.applyRange();
    this.onChange.forEach((fn) => fn(this.range));
  }
  reset() {
    this.range = null;
    for (const c of this.charts) c.applyRange();
    this.onChange.forEach((fn) => fn(null));
  }
}

// Tick steps of a step axis: whole steps only (uPlot's own increments put ticks at 2.5, 7.5 on a 12-step run)
const STEP_INCRS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7].map((p) => m * p)).sort((a, b) => a - b);

const DEFAULTS = { smoothing: { kind: "none", weight: 0.6 }, xMode: "step", xMetric: null, log: false, showRaw: true,
  healthy: null, targets: null, height: 170, xLabel: null };

function withAlpha(hex, a) {
  const n = Math.round(a * 255).toString(16).padStart(2, "0");
  return /^#[0-9a-f]{6}$/i.test(hex) ? hex + n : hex;
}

function lastPerX(xs, cols) {
  // sort by x (stable) when needed, then keep the last point of equal x (uPlot needs ascending unique x)
  let asc = true;
  for (let i = 1; i < xs.length; i++) if (!(xs[i] >= xs[i - 1])) { asc = false; break; }
  let order = xs.map((_, i) => i);
  if (!asc) order = order.filter((i) => xs[i] !== null && Number.isFinite(xs[i])).sort((a, b) => xs[a] - xs[b] || a - b);
  const ox = [], oc = cols.map(() => []);
  for (const i of order) {
    const x = xs[i];
    if (x === null || !Number.isFinite(x)) continue;
    if (ox.length && ox[ox.length - 1] === x) { cols.forEach((c, j) => { oc[j][oc[j].length - 1] = c[i]; }); continue; }
    ox.push(x);
    cols.forEach((c, j) => oc[j].push(c[i]));
  }
  return [ox, ...oc];
}

/** Whether values (in step order, nulls skipped) never go down: a cumulative metric, fit to be an x axis. */
export function nonDecreasing(values) {
  let last = -Infinity;
  for (const v of values) {
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    if (v < last) return false;
    last = v;
  }
  return true;
}

/** uPlot axis size that fits the longest tick label (a fixed width clipped "-1.25e-4", "1.50e+7"). */
function fitAxis(self, values, axisIdx, cycleNum) {
  const axis = self.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let size = axis.ticks.size + axis.gap + 4;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  if (longest) {
    self.ctx.font = axis.font[0];
    size += self.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  }
  return Math.max(40, Math.ceil(size));
}

function nearestIndex(arr, v) {
  let lo = 0, hi = arr.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < v) lo = mid + 1; else hi = mid; }
  if (lo > 0 && Math.abs(arr[lo - 1] - v) <= Math.abs(arr[lo] - v)) lo--;
  return lo;
}

export class Chart {
  /** box: the element uPlot draws into; opts: see DEFAULTS plus {group: SyncGroup, title, legend: element}. */
  constructor(box, opts = {}) {
    this.box = box;
    this.opts = Object.assign({}, DEFAULTS, opts);
    this.group = opts.group || new SyncGroup();
    this.group.charts.add(this);
    this.specs = [];
    this.markers = [];
    this.hidden = new Set();
    this.u = null;
    this.hovered = false;
    this.resize = new ResizeObserver(() => { if (this.u && this.box.clientWidth) this.u.setSize(this.size()); });
    this.resize.observe(this.box);
  }

  size() { return { width: Math.max(120, this.box.clientWidth), height: this.opts.height }; }

  /** specs: [{id, name, color, steps, values, ts, t0, nonfinite, lo, hi, dash}] (lo/hi: a group's band). */
  setSeries(specs) { this.specs = specs.map((s) => ({ ...s })); this.build(); }

  setMarkers(markers) { this.markers = markers || []; if (this.u) this.u.redraw(false); }

  setOptions(o) { Object.assign(this.opts, o); this.build(); }

  /** Live: add points {steps, values, ts, nonfinite} to the series with this id (a new id adds a series). */
  append(id, s, spec) {
    let cur = this.specs.find((x) => x.id === id);
    if (!cur) { this.specs.push({ ...spec, id, steps: [], values: [], ts: [], nonfinite: [] }); cur = this.specs[this.specs.length - 1]; }
    const hasTs = cur.ts.length === cur.steps.length && s.ts.length === s.steps.length; // loaded over steps: no ts
    if (!hasTs) cur.ts = [];
    const lastStep = cur.steps.length ? cur.steps[cur.steps.length - 1] : -Infinity;
    const lastTs = hasTs && cur.ts.length ? cur.ts[cur.ts.length - 1] : -Infinity;
    let added = 0;
    for (let i = 0; i < s.steps.length; i++) {
      if (s.steps[i] < lastStep || (s.steps[i] === lastStep && (!hasTs || s.ts[i] <= lastTs))) continue;
      cur.steps.push(s.steps[i]); cur.values.push(s.values[i]); if (hasTs) cur.ts.push(s.ts[i]); added++;
    }
    cur.nonfinite = [...(cur.nonfinite || []), ...(s.nonfinite || [])];
    if (added) this.update();
    return added;
  }

  lastValue() {
    const s = this.specs[0];
    if (!s) return null;
    for (let i = s.values.length - 1; i >= 0; i--) if (s.values[i] !== null) return s.values[i];
    return null;
  }

  xOf(spec) {
    const m = this.opts.xMode;
    if (m === "time") return spec.ts;
    if (m === "relative") { const t0 = spec.t0 ?? spec.ts[0] ?? 0; return spec.ts.map((v) => v - t0); }
    if (m === "metric") {
      const src = this.opts.xMetric && this.opts.xMetric[spec.id];
      if (!src) return spec.steps.map(() => null);
      const map = new Map();
      src.steps.forEach((s, i) => { if (src.values[i] !== null) map.set(s, src.values[i]); });
      return spec.steps.map((s) => (map.has(s) ? map.get(s) : null));
    }
    return spec.steps;
  }

  prepare() {
    const { kind, weight } = this.opts.smoothing;
    const smoothing = kind !== "none" && weight > 0;
    const positive = (ys) => (this.opts.log ? ys.map((v) => (v !== null && v !== undefined && v > 0 ? v : null)) : ys);
    const tables = [], layout = [];
    this.scatter = false;
    for (const spec of this.specs) {
      const xs = this.xOf(spec);
      // another metric as x that is not cumulative (a per-step count): joined by lines in x order it zigzags,
      // so it is drawn as points (sorted by x) and the page says so
      if (this.opts.xMode === "metric" && !nonDecreasing(xs)) this.scatter = true;
      const cols = [positive(spec.values)];
      if (smoothing) cols.push(positive(smooth(kind, weight, xs, spec.values)));
      if (spec.lo && spec.hi) cols.push(positive(spec.lo), positive(spec.hi));
      tables.push(lastPerX(xs, cols));
      layout.push({ smoothed: smoothing, band: Boolean(spec.lo && spec.hi) });
    }
    return { tables, layout };
  }

  joined() {
    const { tables, layout } = this.prepare();
    if (!tables.length) return { data: [[]], layout };
    const data = tables.length === 1 ? tables[0] : U.join(tables);
    return { data, layout };
  }

  seriesConfig(layout) {
    const series = [{ label: this.opts.xLabel || t("chart.x." + this.opts.xMode) }];
    const bands = [];
    this.index = [];
    this.specs.forEach((spec, i) => {
      const l = layout[i], show = !this.hidden.has(spec.id), idx = { spec };
      // a line needs two points: a metric logged once (or a lone finite value) is drawn as a dot
      const lone = spec.values.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).length < 2;
      const dots = lone || this.scatter;
      const line = { label: spec.name, stroke: spec.color, width: 1.5, show, dash: spec.dash,
        points: dots ? { show: true, size: lone ? 7 : 4, width: 1, fill: spec.color, stroke: spec.color } : { show: false },
        ...(this.scatter ? { paths: () => null } : {}) };
      idx.raw = series.length;
      series.push(l.smoothed ? { ...line, label: spec.name + " (raw)", stroke: withAlpha(spec.color, this.opts.showRaw ? 0.28 : 0), width: 1 } : line);
      if (l.smoothed) { idx.main = series.length; series.push(line); } else idx.main = idx.raw;
      if (l.band) {
        idx.lo = series.length; series.push({ label: spec.name + " min", stroke: withAlpha(spec.color, 0.35), width: 0.5, show, points: { show: false } });
        idx.hi = series.length; series.push({ label: spec.name + " max", stroke: withAlpha(spec.color, 0.35), width: 0.5, show, points: { show: false } });
        bands.push({ series: [idx.hi, idx.lo], fill: withAlpha(spec.color, 0.16) });
      }
      this.index.push(idx);
    });
    return { series, bands };
  }

  axisValues() {
    const m = this.opts.xMode;
    if (m === "relative") return (u, splits) => splits.map((v) => fmtDuration(v));
    if (m === "time") return null;
    return (u, splits) => splits.map((v) => fmtNum(v));
  }

  build() {
    if (this.u) { this.u.destroy(); this.u = null; }
    if (!this.specs.length || !this.box.isConnected) return;
    const { data, layout } = this.joined();
    const { series, bands } = this.seriesConfig(layout);
    const axisColor = cssVar("--muted") || "#888", grid = cssVar("--grid") || "rgba(128,128,128,.15)";
    const axis = { stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: "11px sans-serif" };
    const xAxis = { ...axis, space: 70, ...(this.opts.xMode === "step" ? { incrs: STEP_INCRS } : {}) };
    const fmt = this.axisValues();
    // the x ticks drawn (on the canvas) are also kept as data-xticks: what a test or a script can read
    if (fmt) xAxis.values = (u, splits) => { this.box.dataset.xticks = splits.join(","); return fmt(u, splits); };
    const cfg = {
      ...this.size(), series, bands, legend: { show: false },
      scales: { x: { time: this.opts.xMode === "time" }, y: this.opts.log ? { distr: 3, log: 10 } : this.yScale() },
      axes: [xAxis, { ...axis, size: fitAxis, values: (u, splits) => splits.map((v) => fmtNum(v)) }],
      cursor: {
        sync: { key: this.group.key, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        points: { size: 5 },
        bind: {
          dblclick: () => () => { this.group.reset(); return null; },
          mousedown: (u, targ, handler) => (e) => { if (e.shiftKey) { this.startPan(e); return null; } return handler(e); },
        },
      },
      hooks: {
        setSelect: [(u) => this.onSelect(u)],
        setCursor: [(u) => this.onCursor(u)],
        drawAxes: [(u) => this.drawHealthy(u)],
        draw: [(u) => this.drawMarkers(u), (u) => this.drawTargets(u)],
        ready: [(u) => { if (this.group.range) u.setScale("x", this.group.range); }],
        setScale: [(u, key) => { if (key === "x" || key === "y") { this.box.dataset[key + "min"] = u.scales[key].min; this.box.dataset[key + "max"] = u.scales[key].max; } }],
      },
    };
    this.u = new U(cfg, data, this.box);
    this.u.over.addEventListener("mouseenter", () => { this.hovered = true; });
    this.u.over.addEventListener("mouseleave", () => { this.hovered = false; hideTip(); });
    this.u.over.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.box.dataset.points = String(data[0].length);
    this.box.dataset.scatter = this.scatter ? "1" : "0";
    this.box.dataset.ylog = this.opts.log ? "1" : "0";
    this.box.dataset.series = String(series.length - 1);
  }

  /** Re-join after new data: keep the chart (and a zoomed range) instead of rebuilding it. */
  update() {
    const { tables, layout } = this.prepare();
    const count = 1 + layout.reduce((n, l) => n + 1 + (l.smoothed ? 1 : 0) + (l.band ? 2 : 0), 0);
    if (!this.u || this.u.series.length !== count) { this.build(); return; }
    const data = tables.length === 1 ? tables[0] : U.join(tables);
    this.u.setData(data, !this.group.range);
    if (this.group.range) this.u.setScale("x", this.group.range);
    this.box.dataset.points = String(data[0].length);
  }

  applyRange() {
    if (!this.u) return;
    if (this.group.range) this.u.setScale("x", this.group.range);
    else this.u.setData(this.u.data, true);
  }

  toggle(id) {
    if (this.hidden.has(id)) this.hidden.delete(id); else this.hidden.add(id);
    if (!this.u) return;
    for (const idx of this.index) {
      if (idx.spec.id !== id) continue;
      const show = !this.hidden.has(id);
      for (const i of new Set([idx.raw, idx.main, idx.lo, idx.hi].filter((v) => v !== undefined))) this.u.setSeries(i, { show });
    }
  }

  /** Ctrl/⌘ + wheel zooms the page's x-range around the pointer. */
  onWheel(e) {
    if (!(e.ctrlKey || e.metaKey) || !this.u) return;
    e.preventDefault();
    const { min, max } = this.u.scales.x;
    const x = this.u.posToVal(e.offsetX, "x"), f = e.deltaY > 0 ? 1.25 : 0.8;
    this.group.zoom(x - (x - min) * f, x + (max - x) * f);
  }

  /** Shift + drag pans the page's x-range (one update per animation frame). */
  startPan(e) {
    const u = this.u, x0 = e.clientX, { min, max } = u.scales.x, width = u.over.clientWidth || 1;
    let pending = null;
    const move = (ev) => {
      const shift = -((ev.clientX - x0) / width) * (max - min);
      if (pending === null) pending = requestAnimationFrame(() => { pending = null; this.group.zoom(min + shift, max + shift); });
    };
    const up = () => { document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up); };
    document.addEventListener("mousemove", move);
    document.addEventListener("mouseup", up);
  }

  onSelect(u) {
    if (u.select.width > 3) {
      const min = u.posToVal(u.select.left, "x"), max = u.posToVal(u.select.left + u.select.width, "x");
      this.group.zoom(min, max);
    }
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
  }

  fmtX(v) {
    const m = this.opts.xMode;
    if (m === "time") return fmtTime(v) + ":" + String(new Date(v * 1000).getSeconds()).padStart(2, "0");
    if (m === "relative") return fmtDuration(v);
    if (m === "metric") return fmtNum(v);
    return t("chart.step", { n: fmtNum(v) });
  }

  /** The series' own value nearest to the cursor, with the x where it was logged (runs share no steps). */
  nearest(sidx, idx) {
    const xs = this.u.data[0], ys = this.u.data[sidx];
    if (ys[idx] !== null && ys[idx] !== undefined) return [xs[idx], ys[idx]];
    for (let d = 1; d < xs.length; d++) {
      const a = idx - d, b = idx + d;
      const va = a >= 0 ? ys[a] : undefined, vb = b < xs.length ? ys[b] : undefined;
      const okA = va !== null && va !== undefined, okB = vb !== null && vb !== undefined;
      if (okA && okB) return Math.abs(xs[idx] - xs[a]) <= Math.abs(xs[b] - xs[idx]) ? [xs[a], va] : [xs[b], vb];
      if (okA) return [xs[a], va];
      if (okB) return [xs[b], vb];
      if (a < 0 && b >= xs.length) break;
    }
    return null;
  }

  markerX(m) {
    const mode = this.opts.xMode, spec = this.specs[0];
    if (mode === "step" || !spec) return m.step;
    const i = nearestIndex(spec.steps, m.step);
    if (i < 0) return null;
    return this.xOf(spec)[i];
  }

  onCursor(u) {
    const { left, idx } = u.cursor;
    if (!this.hovered || idx === null || idx === undefined || left === undefined || left < 0) return;
    const rect = u.over.getBoundingClientRect();
    const box = el("div", { class: "chart-tip" }, el("div", { class: "t-key", text: this.fmtX(u.data[0][idx]) }));
    for (const m of this.markers) {
      const x = this.markerX(m);
      if (x === null || x === undefined) continue;
      const px = u.valToPos(x, "x");
      if (Math.abs(px - left) <= 6) box.appendChild(el("div", { class: "t-marker", style: { color: m.color }, text: m.label }));
    }
    for (const ix of this.index) {
      if (this.hidden.has(ix.spec.id)) continue;
      const near = this.nearest(ix.main, idx);
      if (!near) continue;
      const sw = el("span", { class: "sw" }); sw.style.background = ix.spec.color;
      const exact = near[0] === u.data[0][idx];
      box.appendChild(el("div", { class: "t-row" }, sw, el("span", { text: ix.spec.name + " " }),
        el("b", { text: fmtNum(near[1]) }), exact ? null : el("span", { class: "muted", text: " @ " + this.fmtX(near[0]) })));
    }
    showTip(box, rect.left + left, rect.top + (u.cursor.top || 0));
  }

  drawHealthy(u) {
    const h = this.opts.healthy;
    if (!h || (h[0] === null && h[1] === null)) return;
    const { left, top, width, height } = u.bbox;
    const yLo = h[0] === null ? top + height : Math.min(top + height, Math.max(top, u.valToPos(h[0], "y", true)));
    const yHi = h[1] === null ? top : Math.min(top + height, Math.max(top, u.valToPos(h[1], "y", true)));
    if (!Number.isFinite(yLo) || !Number.isFinite(yHi) || yLo - yHi < 1) return;
    u.ctx.save();
    u.ctx.fillStyle = "rgba(63, 185, 80, 0.07)";
    u.ctx.fillRect(left, yHi, width, yLo - yHi);
    u.ctx.restore();
  }

  /** The y scale: auto, widened to keep KPI target lines (opts.targets) in view. A flat series (actor/ppo_kl
   * at 0 with one PPO epoch, a constant lr) gets a band around its value: uPlot's own range for all-zero data
   * is 0..100, which reads as a metric that could reach 100. */
  yScale() {
    const ts = (this.opts.targets || []).map((x) => x.value).filter(Number.isFinite);
    return { auto: true, range: (u, min, max) => {
      if (ts.length) {
        const lo = Math.min(min ?? ts[0], ...ts), hi = Math.max(max ?? ts[0], ...ts), pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.05 || 1;
        return [lo - pad, hi + pad];
      }
      if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
      if (min === max) { const pad = Math.abs(min) * 0.1 || 1; return [min - pad, max + pad]; }
      return U.rangeNum(min, max, 0.1, true);
    } };
  }

  /** KPI targets (opts.targets: [{value, label}]) as dashed horizontal lines with their label. */
  drawTargets(u) {
    const targets = this.opts.targets || [];
    if (!targets.length) return;
    const { left, top, width, height } = u.bbox, ctx = u.ctx, dpr = window.devicePixelRatio || 1;
    ctx.save();
    ctx.strokeStyle = cssVar("--warn") || "#d29922"; ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = 1.5 * dpr; ctx.setLineDash([6 * dpr, 4 * dpr]); ctx.font = `${11 * dpr}px sans-serif`;
    for (const tg of targets) {
      const y = u.valToPos(tg.value, "y", true);
      if (!Number.isFinite(y) || y < top || y > top + height) continue;
      ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(left + width, y); ctx.stroke();
      ctx.fillText(tg.label || String(tg.value), left + 4 * dpr, y - 3 * dpr);
    }
    ctx.restore();
    this.box.dataset.targets = String(targets.length);
  }

  drawMarkers(u) {
    const { left, top, width, height } = u.bbox, ctx = u.ctx, dpr = window.devicePixelRatio || 1;
    ctx.save();
    for (const m of this.markers) {
      const x = this.markerX(m);
      if (x === null || x === undefined) continue;
      const px = u.valToPos(x, "x", true);
      if (px < left || px > left + width) continue;
      ctx.strokeStyle = m.color; ctx.lineWidth = 1.5 * dpr; ctx.setLineDash((m.dash || [4, 3]).map((d) => d * dpr));
      ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, top + height); ctx.stroke();
      if (m.shape === "diamond") {
        ctx.setLineDash([]); ctx.fillStyle = m.color; ctx.beginPath();
        ctx.moveTo(px, top); ctx.lineTo(px + 4 * dpr, top + 4 * dpr); ctx.lineTo(px, top + 8 * dpr); ctx.lineTo(px - 4 * dpr, top + 4 * dpr); ctx.fill();
      }
    }
    ctx.setLineDash([]);
    ctx.fillStyle = cssVar("--crit") || "#f85149";
    for (const spec of this.specs) {
      if (this.hidden.has(spec.id)) continue;
      for (const [step] of spec.nonfinite || []) {
        const x = this.markerX({ step });
        if (x === null || x === undefined) continue;
        const px = u.valToPos(x, "x", true);
        if (px < left || px > left + width) continue;
        ctx.beginPath(); ctx.moveTo(px - 4 * dpr, top); ctx.lineTo(px + 4 * dpr, top); ctx.lineTo(px, top + 7 * dpr); ctx.fill();
      }
    }
    ctx.restore();
  }

  /** The plotted data as CSV: x, then each run's raw (and smoothed) values. */
  toCSV() {
    if (!this.u) return "";
    const cols = [this.u.series[0].label, ...this.u.series.slice(1).map((s) => s.label)];
    const q = (s) => (/[",\n]/.test(String(s)) ? `"${String(s).replace(/"/g, '""')}"` : String(s));
    const lines = [cols.map(q).join(",")];
    const d = this.u.data;
    for (let i = 0; i < d[0].length; i++) lines.push(d.map((c) => (c[i] === null || c[i] === undefined ? "" : String(c[i]))).join(","));
    return lines.join("\n") + "\n";
  }

  /** The chart as a PNG Blob, with its title and legend drawn above the plot. */
  async toPNG(title) {
    if (!this.u) return null;
    const src = this.u.ctx.canvas, dpr = window.devicePixelRatio || 1, head = Math.round(22 * dpr);
    const out = document.createElement("canvas");
    out.width = src.width; out.height = src.height + head;
    const ctx = out.getContext("2d");
    ctx.fillStyle = cssVar("--panel") || "#161a20"; ctx.fillRect(0, 0, out.width, out.height);
    ctx.fillStyle = cssVar("--text") || "#ddd"; ctx.font = `${12 * dpr}px sans-serif`; ctx.textBaseline = "middle";
    let x = 6 * dpr;
    ctx.fillText(title || "", x, head / 2); x += ctx.measureText(title || "").width + 14 * dpr;
    for (const ix of this.index) {
      ctx.fillStyle = ix.spec.color; ctx.fillRect(x, head / 2 - 4 * dpr, 8 * dpr, 8 * dpr); x += 11 * dpr;
      ctx.fillStyle = cssVar("--muted") || "#999"; ctx.fillText(ix.spec.name, x, head / 2); x += ctx.measureText(ix.spec.name).width + 10 * dpr;
    }
    ctx.drawImage(src, 0, head);
    return new Promise((resolve) => out.toBlob(resolve, "image/png"));
  }

  destroy() {
    this.resize.disconnect();
    this.group.charts.delete(this);
    if (this.u) this.u.destroy();
    this.u = null;
  }
}
