// rlcockpit charts: small canvas line charts written for this dashboard (no library, no build step).
//
// LineChart: one or more series over step / wall time / relative time; EMA smoothing (raw line kept
// faint), log scale, healthy-range band, markers (findings, guardrail events) as vertical lines,
// non-finite points as red ticks, hover crosshair with values. append() adds live points without
// redrawing from the server. PathChart: y-vs-x paths per run (reward vs KL), start/end marked.

import { el, fmtNum, fmtDuration } from "./core.js";

const DPR = () => window.devicePixelRatio || 1;
const PAD = { l: 52, r: 10, t: 8, b: 20 };

function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

/** "Nice" tick values covering [lo, hi] (about n of them). */
export function niceTicks(lo, hi, n = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (hi === lo) { hi = lo + 1; lo = lo - 1; }
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => raw <= s) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const v = Math.pow(10, e);
    if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
  }
  return out.length >= 2 ? out : [lo, hi];
}

/** TensorBoard-style debiased EMA; nulls stay null and do not reset the average. */
export function ema(values, weight) {
  if (!weight) return values;
  const out = new Array(values.length);
  let last = 0, n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !Number.isFinite(v)) { out[i] = null; continue; }
    last = last * weight + (1 - weight) * v; n++;
    out[i] = last / (1 - Math.pow(weight, n));
  }
  return out;
}

function lowerBound(arr, x) {
  let lo = 0, hi = arr.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
  return lo;
}

class BasePlot {
  constructor(container, tall) {
    this.box = el("div", { class: "chart-box" + (tall ? " tall" : "") });
    this.canvas = el("canvas");
    this.hover = el("div", { class: "chart-hover", hidden: true });
    this.box.append(this.canvas, this.hover);
    container.appendChild(this.box);
    this.ctx = this.canvas.getContext("2d");
    this.mouse = null;
    this._raf = 0;
    this.ro = new ResizeObserver(() => this.schedule());
    this.ro.observe(this.box);
    this.box.addEventListener("rlc-redraw", () => this.schedule());
    this.canvas.addEventListener("mousemove", (ev) => {
      const r = this.canvas.getBoundingClientRect();
      this.mouse = { x: ev.clientX - r.left, y: ev.clientY - r.top };
      this.schedule();
    });
    this.canvas.addEventListener("mouseleave", () => { this.mouse = null; this.hover.hidden = true; this.schedule(); });
  }
  schedule() { if (!this._raf) this._raf = requestAnimationFrame(() => { this._raf = 0; this.draw(); }); }
  destroy() { this.ro.disconnect(); }
  /** Resize the backing store to the box; returns {w, h, plot rect} in CSS pixels. */
  frame() {
    const w = this.box.clientWidth, h = this.box.clientHeight, dpr = DPR();
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr); this.canvas.height = Math.round(h * dpr);
    }
    const c = this.ctx;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, w, h);
    return { w, h, x0: PAD.l, x1: w - PAD.r, y0: PAD.t, y1: h - PAD.b };
  }
  axes(f, xs, ys, xTicks, yTicks, xFmt) {
    const c = this.ctx;
    c.font = "10px ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', 'Liberation Mono', monospace";
    c.strokeStyle = css("--grid"); c.fillStyle = css("--muted"); c.lineWidth = 1;
    c.textAlign = "right"; c.textBaseline = "middle";
    for (const v of yTicks) {
      const y = Math.round(ys(v)) + 0.5;
      if (y < f.y0 - 1 || y > f.y1 + 1) continue;
      c.beginPath(); c.moveTo(f.x0, y); c.lineTo(f.x1, y); c.stroke();
      c.fillText(fmtNum(v), f.x0 - 5, y);
    }
    c.textAlign = "center"; c.textBaseline = "top";
    for (const v of xTicks) {
      const x = Math.round(xs(v)) + 0.5;
      if (x < f.x0 - 1 || x > f.x1 + 1) continue;
      c.beginPath(); c.moveTo(x, f.y0); c.lineTo(x, f.y1); c.stroke();
      c.fillText(xFmt(v), x, f.y1 + 4);
    }
  }
  showHover(lines, x, y, f) {
    const h = this.hover;
    h.replaceChildren(...lines);
    h.hidden = false;
    const bw = h.offsetWidth, bh = h.offsetHeight;
    h.style.left = (x + 12 + bw > f.w ? x - bw - 12 : x + 12) + "px";
    h.style.top = Math.max(0, Math.min(y - bh / 2, f.h - bh)) + "px";
  }
}

export class LineChart extends BasePlot {
  /** opts: {smoothing, log, xMode: "step"|"time"|"relative", t0, markers: [{step, color, label}], healthy, tall} */
  constructor(container, opts = {}) {
    super(container, opts.tall);
    this.opts = Object.assign({ smoothing: 0, log: false, xMode: "step", t0: 0, markers: [], healthy: null }, opts);
    this.series = [];
  }
  /** series: [{name, color, steps, values, ts, nonfinite}] (arrays as received from the API). */
  setSeries(series) { this.series = series.map((s) => Object.assign({ nonfinite: [] }, s)); this._smoothed = null; this.schedule(); }
  setOptions(o) { Object.assign(this.opts, o); this._smoothed = null; this.schedule(); }
  /** Append live points (only steps beyond the series' last step are taken). Returns count added. */
  append(name, pts) {
    const s = this.series.find((x) => x.name === name);
    if (!s) return 0;
    const last = s.steps.length ? s.steps[s.steps.length - 1] : -Infinity;
    let added = 0;
    for (let i = 0; i < pts.steps.length; i++) {
      if (pts.steps[i] <= last) continue;
      s.steps.push(pts.steps[i]); s.values.push(pts.values[i]); s.ts.push(pts.ts[i]); added++;
    }
    for (const nf of pts.nonfinite || []) if (nf[0] > last) s.nonfinite.push(nf);
    if (added) { this._smoothed = null; this.schedule(); }
    return added;
  }
  lastValue() {
    const s = this.series[0];
    if (!s) return null;
    for (let i = s.values.length - 1; i >= 0; i--) if (s.values[i] !== null) return s.values[i];
    return null;
  }
  xOf(s, i) {
    const m = this.opts.xMode;
    return m === "step" ? s.steps[i] : m === "time" ? s.ts[i] : s.ts[i] - this.opts.t0;
  }
  xForStep(step) {
    if (this.opts.xMode === "step") return step;
    const s = this.series[0];
    if (!s || !s.steps.length) return null;
    const i = Math.min(lowerBound(s.steps, step), s.steps.length - 1);
    return this.xOf(s, i);
  }
  smoothed() {
    if (!this._smoothed) this._smoothed = this.series.map((s) => ema(s.values, this.opts.smoothing));
    return this._smoothed;
  }
  draw() {
    const f = this.frame(), c = this.ctx, o = this.opts;
    if (f.w <= PAD.l + PAD.r + 10 || f.h < 40) return;
    const sm = this.smoothed();
    let xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity;
    for (const s of this.series) {
      const n = s.steps.length;
      if (!n) continue;
      xmin = Math.min(xmin, this.xOf(s, 0)); xmax = Math.max(xmax, this.xOf(s, n - 1));
      for (const v of s.values) {
        if (v === null || (o.log && v <= 0)) continue;
        if (v < ymin) ymin = v; if (v > ymax) ymax = v;
      }
    }
    if (!Number.isFinite(xmin) || !Number.isFinite(ymin)) {
      c.fillStyle = css("--muted"); c.font = "12px sans-serif"; c.textAlign = "center"; c.textBaseline = "middle";
      c.fillText(this.series.some((s) => s.nonfinite.length) ? "only NaN/Inf values" : "no data", f.w / 2, f.h / 2);
      return;
    }
    if (xmax === xmin) { xmax = xmin + 1; }
    let ys, yTicks;
    if (o.log) {
      const lo = Math.log10(ymin), hi = Math.log10(ymax === ymin ? ymin * 10 : ymax), pad = (hi - lo) * 0.05;
      ys = (v) => f.y1 - ((Math.log10(v) - (lo - pad)) / (hi - lo + 2 * pad)) * (f.y1 - f.y0);
      yTicks = logTicks(ymin, ymax === ymin ? ymin * 10 : ymax);
    } else {
      if (ymax === ymin) { ymax += Math.abs(ymax) * 0.1 || 1; ymin -= Math.abs(ymin) * 0.1 || 1; }
      const pad = (ymax - ymin) * 0.06, lo = ymin - pad, hi = ymax + pad;
      ys = (v) => f.y1 - ((v - lo) / (hi - lo)) * (f.y1 - f.y0);
      yTicks = niceTicks(lo, hi, Math.max(2, Math.floor((f.y1 - f.y0) / 32)));
    }
    const xs = (x) => f.x0 + ((x - xmin) / (xmax - xmin)) * (f.x1 - f.x0);
    const xFmt = o.xMode === "step" ? fmtNum : o.xMode === "time"
      ? (t) => { const d = new Date(t * 1000); return d.toTimeString().slice(0, 5); } : fmtDuration;
    const xTicks = o.xMode === "step" ? niceTicks(xmin, xmax, Math.max(2, Math.floor((f.x1 - f.x0) / 80))).filter((v) => Number.isInteger(v))
      : niceTicks(xmin, xmax, Math.max(2, Math.floor((f.x1 - f.x0) / 80)));
    // healthy band
    if (o.healthy && !o.log) {
      const [lo, hi] = o.healthy;
      const yt = hi === null || hi === undefined ? f.y0 : Math.max(f.y0, Math.min(f.y1, ys(hi)));
      const yb = lo === null || lo === undefined ? f.y1 : Math.max(f.y0, Math.min(f.y1, ys(lo)));
      if (yb > yt) { c.fillStyle = "rgba(63,185,80,0.07)"; c.fillRect(f.x0, yt, f.x1 - f.x0, yb - yt); }
    }
    this.axes(f, xs, ys, xTicks, yTicks, xFmt);
    c.save();
    c.beginPath(); c.rect(f.x0, f.y0 - 1, f.x1 - f.x0, f.y1 - f.y0 + 2); c.clip();
    // markers (findings, guardrails)
    for (const m of o.markers || []) {
      const xv = this.xForStep(m.step);
      if (xv === null) continue;
      const x = Math.round(xs(xv)) + 0.5;
      if (x < f.x0 || x > f.x1) continue;
      c.strokeStyle = m.color; c.globalAlpha = 0.8; c.setLineDash(m.dash || [3, 3]); c.lineWidth = 1;
      c.beginPath(); c.moveTo(x, f.y0); c.lineTo(x, f.y1); c.stroke(); c.setLineDash([]);
      c.fillStyle = m.color; c.beginPath();
      if (m.shape === "diamond") { c.moveTo(x, f.y1 - 9); c.lineTo(x + 4, f.y1 - 5); c.lineTo(x, f.y1 - 1); c.lineTo(x - 4, f.y1 - 5); }
      else { c.moveTo(x - 4, f.y0); c.lineTo(x + 4, f.y0); c.lineTo(x, f.y0 + 6); }
      c.fill(); c.globalAlpha = 1;
    }
    this.series.forEach((s, si) => {
      const smooth = o.smoothing > 0;
      this.line(s, s.values, xs, ys, s.color, smooth ? 0.28 : 1, smooth ? 1 : 1.4);
      if (smooth) this.line(s, sm[si], xs, ys, s.color, 1, 1.6);
      c.fillStyle = css("--crit");
      for (const [step] of s.nonfinite) {
        const xv = this.xForStep(step);
        if (xv !== null) c.fillRect(Math.round(xs(xv)) - 1, f.y0, 2, 8);
      }
    });
    c.restore();
    this.drawHover(f, xs, ys, sm);
  }
  line(s, vals, xs, ys, color, alpha, width) {
    const c = this.ctx, log = this.opts.log;
    c.strokeStyle = color; c.globalAlpha = alpha; c.lineWidth = width; c.lineJoin = "round";
    c.beginPath();
    let pen = false, single = null;
    for (let i = 0; i < vals.length; i++) {
      const v = vals[i];
      if (v === null || (log && v <= 0)) { pen = false; continue; }
      const x = xs(this.xOf(s, i)), y = ys(v);
      if (pen) c.lineTo(x, y); else { c.moveTo(x, y); single = [x, y]; }
      pen = true;
    }
    c.stroke();
    if (vals.length === 1 && single) { c.fillStyle = color; c.fillRect(single[0] - 2, single[1] - 2, 4, 4); }
    c.globalAlpha = 1;
  }
  drawHover(f, xs, ys, sm) {
    if (!this.mouse || this.mouse.x < f.x0 || this.mouse.x > f.x1) { this.hover.hidden = true; return; }
    const c = this.ctx, mx = this.mouse.x;
    const lines = [];
    let header = null;
    this.series.forEach((s, si) => {
      if (!s.steps.length) return;
      // nearest point by x (binary search on the monotone x of this series)
      let lo = 0, hi = s.steps.length - 1;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (xs(this.xOf(s, mid)) < mx) lo = mid + 1; else hi = mid; }
      if (lo > 0 && Math.abs(xs(this.xOf(s, lo - 1)) - mx) < Math.abs(xs(this.xOf(s, lo)) - mx)) lo--;
      const x = xs(this.xOf(s, lo)), v = s.values[lo];
      if (!header) {
        header = `step ${s.steps[lo]}` + (this.opts.xMode !== "step" ? `  ${new Date(s.ts[lo] * 1000).toLocaleTimeString()}` : "");
        c.strokeStyle = css("--muted"); c.globalAlpha = 0.6; c.beginPath(); c.moveTo(x + 0.5, f.y0); c.lineTo(x + 0.5, f.y1); c.stroke();
        c.globalAlpha = 1;
      }
      if (v !== null && !(this.opts.log && v <= 0)) { c.fillStyle = s.color; c.beginPath(); c.arc(x, ys(v), 3, 0, 7); c.fill(); }
      const sv = this.opts.smoothing > 0 ? sm[si][lo] : null;
      const nf = v === null ? (s.nonfinite.find((p) => p[0] === s.steps[lo]) || [0, "null"])[1] : null;
      lines.push(el("div", {}, el("span", { class: "sw", style: null }), (this.series.length > 1 ? s.name + ": " : "") +
        (nf || fmtNum(v)) + (sv !== null && sv !== undefined ? `  (smoothed ${fmtNum(sv)})` : "")));
      lines[lines.length - 1].firstChild.style.background = s.color;
    });
    if (!header) { this.hover.hidden = true; return; }
    const near = (this.opts.markers || []).filter((m) => {
      const xv = this.xForStep(m.step);
      return xv !== null && Math.abs(xs(xv) - mx) <= 4;
    });
    const body = [el("div", { class: "muted", text: header }), ...lines,
      ...near.map((m) => el("div", { text: "▲ " + m.label }))];
    this.showHover(body, mx, this.mouse.y, f);
  }
}

export class PathChart extends BasePlot {
  /** paths: [{name, color, x: [], y: [], steps: []}]; labels: {x, y}. */
  constructor(container, labels) { super(container, true); this.paths = []; this.labels = labels; }
  setPaths(paths) { this.paths = paths; this.schedule(); }
  draw() {
    const f = this.frame(), c = this.ctx;
    f.y1 -= 12;
    let xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity;
    for (const p of this.paths) for (let i = 0; i < p.x.length; i++) {
      xmin = Math.min(xmin, p.x[i]); xmax = Math.max(xmax, p.x[i]); ymin = Math.min(ymin, p.y[i]); ymax = Math.max(ymax, p.y[i]);
    }
    if (!Number.isFinite(xmin)) {
      c.fillStyle = css("--muted"); c.textAlign = "center"; c.fillText("no run logs both KL and reward", f.w / 2, f.h / 2); return;
    }
    const px = (xmax - xmin) * 0.05 || 1, py = (ymax - ymin) * 0.06 || 1;
    xmin -= px; xmax += px; ymin -= py; ymax += py;
    const xs = (v) => f.x0 + ((v - xmin) / (xmax - xmin)) * (f.x1 - f.x0);
    const ys = (v) => f.y1 - ((v - ymin) / (ymax - ymin)) * (f.y1 - f.y0);
    this.axes(f, xs, ys, niceTicks(xmin, xmax, 6), niceTicks(ymin, ymax, 6), fmtNum);
    c.fillStyle = css("--muted"); c.textAlign = "center"; c.textBaseline = "bottom";
    c.fillText(this.labels.x + " →", (f.x0 + f.x1) / 2, f.h - 1);
    c.save(); c.translate(10, (f.y0 + f.y1) / 2); c.rotate(-Math.PI / 2); c.textBaseline = "top";
    c.fillText(this.labels.y + " →", 0, -8); c.restore();
    let best = null;
    for (const p of this.paths) {
      c.strokeStyle = p.color; c.lineWidth = 1.5; c.beginPath();
      p.x.forEach((x, i) => (i ? c.lineTo(xs(x), ys(p.y[i])) : c.moveTo(xs(x), ys(p.y[i]))));
      c.stroke();
      if (p.x.length) {
        c.lineWidth = 2; c.beginPath(); c.arc(xs(p.x[0]), ys(p.y[0]), 4, 0, 7); c.stroke();
        const n = p.x.length - 1;
        c.fillStyle = p.color; c.beginPath(); c.arc(xs(p.x[n]), ys(p.y[n]), 4.5, 0, 7); c.fill();
      }
      if (this.mouse) p.x.forEach((x, i) => {
        const d = Math.hypot(xs(x) - this.mouse.x, ys(p.y[i]) - this.mouse.y);
        if (d < 12 && (!best || d < best.d)) best = { d, p, i };
      });
    }
    if (best) {
      const { p, i } = best;
      c.strokeStyle = css("--text"); c.beginPath(); c.arc(xs(p.x[i]), ys(p.y[i]), 5, 0, 7); c.stroke();
      this.showHover([el("div", { text: p.name }), el("div", { class: "muted", text: `step ${p.steps[i]}` }),
        el("div", { text: `${this.labels.x} ${fmtNum(p.x[i])}` }), el("div", { text: `${this.labels.y} ${fmtNum(p.y[i])}` })],
      this.mouse.x, this.mouse.y, f);
    } else this.hover.hidden = true;
  }
}
