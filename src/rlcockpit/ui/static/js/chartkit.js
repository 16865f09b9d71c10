// Chart cards (title with the metric guide's tooltip, last value, per-chart log / enlarge / PNG / CSV,
// a legend whose entries toggle runs), the enlarge dialog, and the reward-vs-KL path plot.

import { attachTip, clear, download, el, fmtNum, guideEntry, healthyRange, hideTip, kpiTargets, metricTip, safeFileName, showTip } from "./core.js";
import { t } from "./i18n.js";
import { Chart } from "./chart.js";

/** A card for metric `key`: {card, chart, refresh()}; opts go to Chart (group, xMode, smoothing...). */
export function chartCard(key, opts = {}) {
  const name = el("span", { class: "name metric-name" + (guideEntry(key) ? " known" : ""), text: key });
  attachTip(name, () => metricTip(key));
  const last = el("span", { class: "last" });
  const box = el("div", { class: "chart-box" });
  const legend = el("div", { class: "chart-legend" });
  const logBtn = el("button", { type: "button", class: "btn tiny log-btn", title: t("chart.log.title"), text: t("chart.log") });
  const bigBtn = el("button", { type: "button", class: "btn tiny enlarge-btn", title: t("chart.enlarge"), text: "⤢" });
  const pngBtn = el("button", { type: "button", class: "btn tiny png-btn", title: t("chart.png.title"), text: "PNG" });
  const csvBtn = el("button", { type: "button", class: "btn tiny csv-btn", title: t("chart.csv.title"), text: "CSV" });
  const card = el("div", { class: "chart-card", dataset: { key } },
    el("div", { class: "chart-title" }, name, last, el("span", { class: "chart-tools" }, logBtn, bigBtn, pngBtn, csvBtn)), box, legend);
  const chart = new Chart(box, { healthy: healthyRange(key), targets: kpiTargets(key), ...opts });
  const refresh = () => {
    last.textContent = fmtNum(chart.lastValue());
    logBtn.classList.toggle("on", Boolean(chart.opts.log));
    drawLegend(legend, chart);
  };
  logBtn.addEventListener("click", () => { chart.setOptions({ log: !chart.opts.log }); refresh(); if (opts.onLog) opts.onLog(key, chart.opts.log); });
  bigBtn.addEventListener("click", () => enlarge(key, chart));
  pngBtn.addEventListener("click", async () => { const b = await chart.toPNG(key); if (b) download(b, safeFileName(key) + ".png"); });
  csvBtn.addEventListener("click", () => download(new Blob([chart.toCSV()], { type: "text/csv" }), safeFileName(key) + ".csv"));
  return { card, chart, refresh, last };
}

function drawLegend(box, chart) {
  clear(box);
  if (chart.specs.length < 2) return;
  for (const spec of chart.specs) {
    const sw = el("span", { class: "sw" }); sw.style.background = spec.color;
    const item = el("span", { class: "legend-item" + (chart.hidden.has(spec.id) ? " off" : ""), dataset: { id: spec.id }, title: t("chart.legend.toggle") }, sw, spec.name);
    item.addEventListener("click", () => { chart.toggle(spec.id); item.classList.toggle("off", chart.hidden.has(spec.id)); });
    box.appendChild(item);
  }
}

/** The same chart, large, in a dialog (Esc or the button closes it); it keeps the page's zoom sync. */
export function enlarge(key, chart) {
  const box = el("div", { class: "chart-box big" });
  const close = el("button", { type: "button", class: "btn", id: "enlarge-close", text: t("chart.close") });
  const dlg = el("div", { class: "modal", id: "enlarged" }, el("div", { class: "modal-inner" },
    el("div", { class: "chart-title" }, el("span", { class: "name", text: key }), el("span", { class: "grow" }), close), box));
  document.body.appendChild(dlg);
  const big = new Chart(box, { ...chart.opts, group: chart.group, height: Math.round(window.innerHeight * 0.7) });
  big.hidden = new Set(chart.hidden);
  big.setSeries(chart.specs);
  big.setMarkers(chart.markers);
  const done = () => { big.destroy(); dlg.remove(); hideTip(); document.removeEventListener("keydown", onKey); };
  const onKey = (e) => { if (e.key === "Escape") done(); };
  close.addEventListener("click", done);
  document.addEventListener("keydown", onKey);
  return big;
}

/** Reward (y) against KL (x) per run, drawn in data order (uPlot's mode 2 with a path builder that
 *  follows the points instead of sorting them by x); ○ marks the start, ● the end. */
export function pathPlot(box, paths, xLabel, yLabel) {
  const U = window.uPlot;
  const follow = (u, sidx) => {
    const [xs, ys] = u.data[sidx];
    const p = new Path2D();
    for (let i = 0; i < xs.length; i++) {
      const x = u.valToPos(xs[i], "x", true), y = u.valToPos(ys[i], "y", true);
      if (i === 0) p.moveTo(x, y); else p.lineTo(x, y);
    }
    const ends = new Path2D();
    if (xs.length) {
      const dpr = window.devicePixelRatio || 1, r = 3.5 * dpr;
      const x1 = u.valToPos(xs[xs.length - 1], "x", true), y1 = u.valToPos(ys[ys.length - 1], "y", true);
      ends.moveTo(x1 + r, y1); ends.arc(x1, y1, r, 0, 2 * Math.PI);
    }
    return { stroke: p, fill: ends };
  };
  const series = [{}, ...paths.map((p) => ({ label: p.name, stroke: p.color, fill: p.color, width: 1.5, paths: follow, points: { show: false },
    facets: [{ scale: "x", auto: true }, { scale: "y", auto: true }] }))];
  const data = [null, ...paths.map((p) => [p.x, p.y])];
  const muted = getComputedStyle(document.documentElement).getPropertyValue("--muted").trim();
  const axis = { stroke: muted, grid: { stroke: "rgba(139,149,163,.14)" }, values: (u, s) => s.map(fmtNum) };
  const u = new U({ mode: 2, width: Math.max(200, box.clientWidth), height: 300, series, legend: { show: false },
    scales: { x: { time: false, auto: true }, y: { auto: true } }, axes: [{ ...axis, label: xLabel }, { ...axis, label: yLabel, size: 60 }],
    cursor: { drag: { x: false, y: false } }, hooks: { setCursor: [(uu) => {
      const { left, top } = uu.cursor;
      if (left === undefined || left < 0) return;
      const rect = uu.over.getBoundingClientRect();
      showTip(el("div", {}, el("div", { text: `${xLabel} ${fmtNum(uu.posToVal(left, "x"))}` }), el("div", { text: `${yLabel} ${fmtNum(uu.posToVal(top, "y"))}` })),
        rect.left + left, rect.top + top);
    }] } }, data, box);
  u.over.addEventListener("mouseleave", hideTip);
  return u;
}
