// The run page's Charts tab: one chart per metric in sections by prefix, regex search, smoothing, x axis,
// other runs overlaid ("add runs"), findings on the charts of the metrics they cite, live updates.
// Every setting is kept in the URL (shareable) and in localStorage (the default next time).

import { api, clear, debounce, decodeSeries, el, metricMatcher, PALETTE, runPath } from "./core.js";
import { t } from "./i18n.js";
import { SyncGroup, nonDecreasing } from "./chart.js";
import { chartCard } from "./chartkit.js";
import { SMOOTHERS } from "./smooth.js";
import { settings } from "./state.js";

const CHART_POINTS = 1000; // per chart: min/max per bucket, so ~2 points per pixel column
const BATCH = 50;
const SEV_COLOR = { critical: "#f85149", warning: "#d29922", info: "#58a6ff" };
const GUARDRAIL_COLOR = "#bc8cff";
const LIST = (s) => (s ? String(s).split(",").filter(Boolean) : []);
// verl's usual sections first (as rlcockpit.ui.analysis.PANEL_GROUPS), then other prefixes A–Z, "other" last
const PANEL_GROUPS = ["actor", "critic", "response_length", "perf", "timing_s", "val-core", "samples", "system"];
function sectionOrder(a, b) {
  const rank = (p) => (PANEL_GROUPS.includes(p) ? [0, PANEL_GROUPS.indexOf(p), ""] : p === "other" ? [2, 0, ""] : [1, 0, p]);
  const ra = rank(a), rb = rank(b);
  return ra[0] - rb[0] || ra[1] - rb[1] || (ra[2] < rb[2] ? -1 : ra[2] > rb[2] ? 1 : 0);
}

/** Metric keys a guardrail's text names: in full, else by their last path segment as a whole word. */
function mentioned(keys, text) {
  if (!text) return [];
  const full = keys.filter((k) => text.includes(k));
  if (full.length) return full;
  return keys.filter((k) => { const leaf = k.split("/").pop(); return leaf.length > 3 && new RegExp(`(^|[^\\w/])${leaf.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\w])`).test(text); });
}

/** Markers per metric key: a finding goes on the charts of the metrics it cites; a guardrail event on the
 *  charts of the finding that triggered it. */
export function markersByKey(detail) {
  const byKey = new Map();
  const add = (key, m) => { if (!byKey.has(key)) byKey.set(key, []); byKey.get(key).push(m); };
  const byId = new Map(detail.findings.map((f) => [f.id, f]));
  for (const f of detail.findings) {
    if (f.step === null || f.step === undefined) continue;
    const label = `${t("severity." + (f.severity || "info"))}: ${f.title} (${f.detector || "finding"}, ${t("chart.step", { n: f.step })})`;
    for (const key of f.cites || []) add(key, { step: f.step, color: SEV_COLOR[f.severity] || SEV_COLOR.info, dash: [4, 3], label });
  }
  for (const e of detail.events) {
    if (e.kind !== "guardrail" || e.step === null || e.step === undefined) continue;
    const p = e.payload || {};
    const f = byId.get(p.finding_id);
    const keys = f ? f.cites || [] : p.metric ? [p.metric] : mentioned(detail.keys, [p.rule, p.title, p.reason].filter(Boolean).join(" "));
    const label = t("chart.guardrail", { action: p.action || p.rule || "", title: p.title || p.rule || "" });
    for (const key of keys) add(key, { step: e.step, color: GUARDRAIL_COLOR, dash: [1, 3], shape: "diamond", label });
  }
  return byKey;
}

function toolbar(s, keys, others, onChange) {
  const v = s.values;
  const filter = el("input", { type: "search", id: "metric-filter", placeholder: t("charts.filter"), value: v.q });
  const bad = el("span", { class: "muted", id: "filter-invalid" });
  filter.addEventListener("input", debounce(() => { s.set("q", filter.value); onChange("filter"); }, 120));
  const kind = el("select", { id: "smoothing-kind" }, SMOOTHERS.map((k) => el("option", { value: k, text: t("smooth." + k) })));
  kind.value = v.smooth;
  const weight = el("input", { type: "range", id: "smoothing", min: 0, max: 0.99, step: 0.01, value: v.sw });
  const wLabel = el("span", { class: "mono", text: Number(v.sw).toFixed(2) });
  kind.addEventListener("change", () => { s.set("smooth", kind.value); onChange("smooth"); });
  weight.addEventListener("input", () => { wLabel.textContent = Number(weight.value).toFixed(2); });
  weight.addEventListener("change", () => { s.set("sw", Number(weight.value)); onChange("smooth"); });
  const xSel = el("select", { id: "x-axis" }, ["step", "time", "relative"].map((m) => el("option", { value: m, text: t("chart.x." + m) })),
    el("optgroup", { label: t("charts.x.metric") }, keys.map((k) => el("option", { value: "metric:" + k, text: k }))));
  xSel.value = v.x;
  xSel.addEventListener("change", () => { s.set("x", xSel.value); onChange("x"); });
  const add = el("select", { id: "add-run" }, el("option", { value: "", text: t("charts.addRun") }),
    others.map((r) => el("option", { value: r.id, text: `${r.name} (${r.id.slice(0, 8)})` })));
  add.addEventListener("change", () => { if (!add.value) return; const ids = LIST(v.overlay); if (!ids.includes(add.value)) ids.push(add.value); s.set("overlay", ids.join(",")); add.value = ""; onChange("overlay"); });
  const cols = el("select", { id: "layout-cols", title: t("charts.layout") }, [0, 1, 2, 3, 4].map((n) => el("option", { value: n, text: n ? t("charts.cols", { n }) : t("charts.cols.auto") })));
  cols.value = String(v.cols);
  cols.addEventListener("change", () => { s.set("cols", Number(cols.value)); onChange("layout"); });
  const marks = el("input", { type: "checkbox", id: "show-markers", checked: v.markers });
  marks.addEventListener("change", () => { s.set("markers", marks.checked); onChange("markers"); });
  const reset = el("button", { type: "button", class: "btn", id: "reset-zoom", text: t("charts.resetZoom") });
  return { node: el("div", { class: "toolbar" }, filter, bad, el("label", {}, t("charts.smoothing"), kind, weight, wLabel),
    el("label", {}, t("charts.xaxis"), xSel), add, el("label", {}, marks, t("charts.markers")), cols, reset,
    el("span", { class: "grow" }), el("span", { class: "muted", id: "point-info" })), filter, bad, reset,
  xWarn: el("div", { class: "muted", id: "x-warning", hidden: true }) };
}

export async function renderCharts(body, detail) {
  const run = detail.run;
  const s = settings("charts", { q: "", smooth: "none", sw: 0.6, x: "step", overlay: "", cols: 0, markers: true, collapsed: "", log: "" });
  const v = s.values;
  const group = new SyncGroup();
  const charts = new Map(); // key -> {card, chart, refresh, section}
  const sections = new Map(); // prefix -> {section, grid}
  let markers = markersByKey(detail);
  let projectRuns = [];
  try { projectRuns = (await api("/api/runs", { project: run.project })).runs.filter((r) => r.id !== run.id); } catch (e) { projectRuns = []; }
  const keys = [...detail.keys];
  const bar = toolbar(s, keys.filter((k) => !k.startsWith("system/")), projectRuns, (what) => changed(what));
  const chips = el("div", { class: "chips", id: "overlay-chips" });
  body.append(bar.node, bar.xWarn, chips);
  const empty = el("div", { class: "empty", id: "no-metrics", text: t("charts.none") });
  body.appendChild(empty);
  const wrap = el("div", { id: "sections" });
  body.appendChild(wrap);
  bar.reset.addEventListener("click", () => group.reset());

  const colorOf = (rid) => (rid === run.id ? PALETTE[0] : PALETTE[(LIST(v.overlay).indexOf(rid) + 1) % PALETTE.length]);
  const nameOf = (rid) => (rid === run.id ? run.name : (projectRuns.find((r) => r.id === rid) || { name: rid }).name);
  const xMode = () => (v.x.startsWith("metric:") ? "metric" : v.x);
  const chartOpts = () => ({ xMode: xMode(), smoothing: { kind: v.smooth, weight: Number(v.sw) }, xLabel: v.x.startsWith("metric:") ? v.x.slice(7) : null });
  const logKeys = new Set(LIST(v.log));

  function sectionFor(prefix) {
    if (sections.has(prefix)) return sections.get(prefix);
    const grid = el("div", { class: "charts" });
    const collapsed = LIST(v.collapsed).includes(prefix);
    const count = el("span", { class: "count" });
    const title = el("div", { class: "group-title" + (collapsed ? " collapsed" : "") }, el("span", { class: "caret", text: "▾" }), prefix, count);
    const section = el("section", { class: "group", dataset: { group: prefix } }, title, grid);
    grid.hidden = collapsed;
    title.addEventListener("click", () => {
      grid.hidden = !grid.hidden;
      title.classList.toggle("collapsed", grid.hidden);
      const set = new Set(LIST(v.collapsed));
      if (grid.hidden) set.add(prefix); else set.delete(prefix);
      s.set("collapsed", [...set].join(","));
      if (!grid.hidden) for (const c of charts.values()) if (c.prefix === prefix) c.chart.build();
    });
    // the server's order (analysis.group_keys), also for sections that appear live
    const later = [...sections.keys()].filter((p) => sectionOrder(p, prefix) > 0).sort(sectionOrder);
    wrap.insertBefore(section, later.length ? sections.get(later[0]).section : null);
    const entry = { section, grid, count };
    sections.set(prefix, entry);
    return entry;
  }

  function addChart(key) {
    const prefix = key.includes("/") && key.split("/")[0] ? key.split("/")[0] : "other";
    const sec = sectionFor(prefix);
    const c = chartCard(key, { group, ...chartOpts(), log: logKeys.has(key), onLog: (k, on) => {
      if (on) logKeys.add(k); else logKeys.delete(k);
      s.set("log", [...logKeys].join(","));
    } });
    c.prefix = prefix;
    sec.grid.appendChild(c.card);
    charts.set(key, c);
    c.chart.setMarkers(v.markers ? markers.get(key) || [] : []);
    return c;
  }

  function applyFilter() {
    const m = metricMatcher(v.q);
    bar.bad.textContent = m.invalid ? t("charts.badRegex") : "";
    for (const [key, c] of charts) c.card.hidden = !m.test(key);
    for (const sec of sections.values()) {
      const shown = sec.grid.querySelectorAll(".chart-card:not([hidden])").length;
      sec.section.hidden = !shown;
      sec.count.textContent = String(shown);
    }
    empty.hidden = charts.size > 0;
  }

  function applyLayout() {
    wrap.style.setProperty("--chart-cols", v.cols ? String(v.cols) : "");
    wrap.classList.toggle("fixed-cols", Number(v.cols) > 0);
  }

  function drawChips() {
    clear(chips);
    for (const rid of LIST(v.overlay)) {
      const sw = el("span", { class: "sw" }); sw.style.background = colorOf(rid);
      const x = el("button", { type: "button", class: "chip-x", title: t("charts.removeRun"), text: "×" });
      x.addEventListener("click", () => { s.set("overlay", LIST(v.overlay).filter((r) => r !== rid).join(",")); changed("overlay"); });
      chips.appendChild(el("span", { class: "chip", dataset: { run: rid } }, sw, nameOf(rid), x));
    }
  }

  async function fetchSeries(rid, wanted, maxPoints) {
    const out = {};
    const batches = [];
    for (let i = 0; i < wanted.length; i += BATCH) batches.push(wanted.slice(i, i + BATCH));
    const ts = xMode() === "time" || xMode() === "relative"; // over steps the store skips reading timestamps
    const results = await Promise.all(batches.map((b) => api(runPath(rid) + "/series", { keys: b.join(","), max_points: maxPoints,
      format: "b64", ts: ts ? "true" : "false" }).catch(() => null)));
    for (const res of results) if (res) for (const [k, ser] of Object.entries(res.series)) out[k] = decodeSeries(ser);
    return out;
  }

  let xMetric = null;
  async function loadAll() {
    const runIds = [run.id, ...LIST(v.overlay)];
    const perRun = await Promise.all(runIds.map((rid) => fetchSeries(rid, keys, CHART_POINTS)));
    xMetric = null;
    if (v.x.startsWith("metric:")) {
      const xk = v.x.slice(7);
      const xs = await Promise.all(runIds.map((rid) => fetchSeries(rid, [xk], 20000)));
      xMetric = Object.fromEntries(runIds.map((rid, i) => [rid, xs[i][xk] || { steps: [], values: [] }]));
    }
    const notCumulative = xMetric && Object.values(xMetric).some((x) => !nonDecreasing(x.values));
    bar.xWarn.hidden = !notCumulative;
    bar.xWarn.textContent = notCumulative ? t("charts.x.notCumulative", { key: v.x.slice(7) }) : "";
    for (const key of keys) {
      const c = charts.get(key) || addChart(key);
      const specs = runIds.map((rid, i) => perRun[i][key] && { id: rid, name: nameOf(rid), color: colorOf(rid), t0: rid === run.id ? run.created_at : undefined, ...perRun[i][key] }).filter(Boolean);
      c.chart.opts.xMetric = xMetric;
      Object.assign(c.chart.opts, chartOpts());
      c.chart.setSeries(specs);
      c.refresh();
    }
    applyFilter();
    body.dataset.loaded = "1";
  }

  async function changed(what) {
    if (what === "filter") { applyFilter(); return; }
    if (what === "layout") { applyLayout(); for (const c of charts.values()) c.chart.build(); return; }
    if (what === "markers") { for (const [k, c] of charts) c.chart.setMarkers(v.markers ? markers.get(k) || [] : []); return; }
    if (what === "smooth") { for (const c of charts.values()) c.chart.setOptions(chartOpts()); return; }
    if (what === "overlay") drawChips();
    group.reset();
    await loadAll();
  }

  applyLayout();
  drawChips();
  if (!keys.length) applyFilter();
  await loadAll();

  return {
    onPoints(d) {
      let added = 0;
      for (const [key, raw] of Object.entries(d.series)) {
        const ser = decodeSeries(raw);
        let c = charts.get(key);
        if (!c) {
          keys.push(key);
          c = addChart(key);
          Object.assign(c.chart.opts, { xMetric });
        }
        added += c.chart.append(run.id, ser, { name: run.name, color: PALETTE[0], t0: run.created_at });
        c.refresh();
      }
      applyFilter();
      const info = document.getElementById("point-info");
      if (info) info.textContent = added ? t("charts.added", { n: added }) : "";
    },
    onFindings() {
      markers = markersByKey(detail);
      for (const [k, c] of charts) c.chart.setMarkers(v.markers ? markers.get(k) || [] : []);
    },
    dispose() { for (const c of charts.values()) c.chart.destroy(); },
  };
}
