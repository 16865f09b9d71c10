// Compare runs: overlaid metrics (each run's own nearest point in the tooltip, never another run's step),
// smoothing and x axis as on the run page, grouping (mean with a min–max band) by group, tags or any
// differing config key, reward-vs-KL paths (runs without KL or reward are listed, not dropped), config diff.

import { api, clear, decodeSeries, el, metricMatcher, PALETTE, setCrumbs } from "./core.js";
import { t } from "./i18n.js";
import { SyncGroup, nonDecreasing } from "./chart.js";
import { chartCard, pathPlot } from "./chartkit.js";
import { SMOOTHERS } from "./smooth.js";
import { settings } from "./state.js";

const DEFAULT_OVERLAYS = ["critic/score/mean", "actor/kl_loss", "actor/entropy", "response_length/mean", "actor/pg_loss", "actor/grad_norm"];
const LIST = (s) => (s ? String(s).split(",").filter(Boolean) : []);

export async function renderCompare(root, params) {
  const ids = LIST(params.get("runs"));
  setCrumbs([[t("nav.runs"), "#/"], [t("nav.compare"), null]]);
  if (ids.length < 1) { root.appendChild(el("div", { class: "empty", text: t("compare.select") })); return () => {}; }
  const meta = await api("/api/compare", { runs: ids.join(",") });
  const s = settings("compare", { keys: "", smooth: "none", sw: 0.6, x: "step", by: "", hide: "", points: 1000 });
  const v = s.values;
  const colors = new Map(meta.runs.map((r, i) => [r.id, PALETTE[i % PALETTE.length]]));
  const group = new SyncGroup();
  const charts = new Map();
  const hidden = new Set(LIST(v.hide));

  const legend = el("div", { class: "legend", id: "compare-legend" });
  const drawLegend = () => {
    clear(legend);
    for (const r of meta.runs) {
      const sw = el("span", { class: "sw" }); sw.style.background = colors.get(r.id);
      const item = el("span", { class: "legend-item" + (hidden.has(r.id) ? " off" : ""), dataset: { run: r.id }, title: t("chart.legend.toggle") }, sw, r.name);
      item.addEventListener("click", () => {
        if (hidden.has(r.id)) hidden.delete(r.id); else hidden.add(r.id);
        s.set("hide", [...hidden].join(","));
        for (const c of charts.values()) c.chart.toggle(r.id);
        drawLegend();
      });
      legend.append(item, el("a", { href: "#/run/" + encodeURIComponent(r.id), class: "muted", text: "↗" }));
    }
  };
  let keys = LIST(v.keys);
  if (!keys.length) keys = DEFAULT_OVERLAYS.filter((k) => meta.keys.includes(k));
  if (!keys.length) keys = meta.keys.slice(0, 4);
  const picker = el("select", { id: "metric-picker" }, el("option", { value: "", text: t("compare.addMetric") }), meta.keys.map((k) => el("option", { value: k, text: k })));
  const addRx = el("input", { type: "search", id: "metric-add-regex", placeholder: t("compare.addRegex") });
  const kind = el("select", { id: "smoothing-kind" }, SMOOTHERS.map((k) => el("option", { value: k, text: t("smooth." + k) })));
  kind.value = v.smooth;
  const weight = el("input", { type: "range", id: "smoothing", min: 0, max: 0.99, step: 0.01, value: v.sw });
  const xSel = el("select", { id: "x-axis" }, ["step", "time", "relative"].map((m) => el("option", { value: m, text: t("chart.x." + m) })),
    el("optgroup", { label: t("charts.x.metric") }, meta.keys.map((k) => el("option", { value: "metric:" + k, text: k }))));
  xSel.value = v.x;
  const differing = (meta.config_diff || []).filter((r) => r.differs).map((r) => r.key);
  const bySel = el("select", { id: "group-by" }, el("option", { value: "", text: t("compare.noGroups") }), el("option", { value: "group", text: t("compare.byGroup") }),
    el("option", { value: "tags", text: t("compare.byTags") }), differing.length ? el("optgroup", { label: t("compare.byConfig") }, differing.map((k) => el("option", { value: k, text: k }))) : null);
  bySel.value = v.by;
  const reset = el("button", { type: "button", class: "btn", id: "reset-zoom", text: t("charts.resetZoom") });
  reset.addEventListener("click", () => group.reset());
  const grid = el("div", { class: "charts", id: "compare-charts" });
  const pathBox = el("div", { class: "chart-card", id: "path-plot" });
  const missing = el("div", { class: "muted", id: "path-missing" });
  const diffWrap = el("div");
  const onlyDiff = el("input", { type: "checkbox", id: "only-diff", checked: true });
  const xWarn = el("div", { class: "muted", id: "x-warning", hidden: true });
  root.append(legend, el("div", { class: "toolbar" }, picker, addRx, el("label", {}, t("charts.smoothing"), kind, weight), el("label", {}, t("charts.xaxis"), xSel),
    el("label", {}, t("compare.groupBy"), bySel), reset, el("span", { class: "grow" })), xWarn,
  el("div", { class: "two-col" }, el("div", {}, el("div", { class: "section-title", text: t("compare.metrics") }), grid),
    el("div", {}, el("div", { class: "section-title", text: t("compare.path") }), pathBox, missing,
      el("div", { class: "toolbar" }, el("div", { class: "section-title", text: t("compare.diff") }), el("label", {}, onlyDiff, t("compare.onlyDiff"))), diffWrap)));
  drawLegend();

  let xMetric = null; // run id -> {steps, values} of the x metric, when the x axis is another metric
  const xMode = () => (v.x.startsWith("metric:") && !v.by ? "metric" : v.x.startsWith("metric:") ? "step" : v.x);
  const chartOpts = () => ({ xMode: xMode(), xMetric, xLabel: xMode() === "metric" ? v.x.slice(7) : null,
    smoothing: { kind: v.smooth, weight: Number(v.sw) } });
  async function loadXMetric() {
    xMetric = null;
    xWarn.hidden = true;
    if (!v.x.startsWith("metric:")) return;
    const data = await api("/api/compare", { runs: ids.join(","), keys: v.x.slice(7), max_points: 20000, format: "b64" });
    xMetric = Object.fromEntries(data.runs.map((r) => [r.id, decodeSeries(r.series[v.x.slice(7)])]));
    const notCumulative = xMode() === "metric" && Object.values(xMetric).some((x) => x && !nonDecreasing(x.values));
    xWarn.hidden = !notCumulative;
    xWarn.textContent = notCumulative ? t("charts.x.notCumulative", { key: v.x.slice(7) }) : "";
  }
  async function loadCharts() {
    s.set("keys", keys.join(","));
    for (const c of charts.values()) { c.chart.destroy(); c.card.remove(); }
    charts.clear();
    if (!keys.length) return;
    const data = await api("/api/compare", { runs: ids.join(","), keys: keys.join(","), max_points: v.points, format: "b64", group_by: v.by || undefined });
    for (const key of keys) {
      const c = chartCard(key, { group, ...chartOpts(), height: 200 });
      grid.appendChild(c.card);
      let specs;
      if (v.by && data.groups) {
        specs = data.groups.map((g, i) => {
          const ser = g.series[key];
          return { id: "g:" + g.name, name: `${g.name} (n=${g.runs.length})`, color: PALETTE[i % PALETTE.length], steps: ser.steps, ts: ser.steps,
            values: ser.mean, lo: ser.lo, hi: ser.hi, nonfinite: [] };
        }).filter((sp) => sp.steps.length);
      } else {
        specs = data.runs.filter((r) => r.series[key]).map((r) => ({ id: r.id, name: r.name, color: colors.get(r.id), t0: r.created_at, ...decodeSeries(r.series[key]) }));
      }
      c.chart.hidden = new Set([...hidden].filter((h) => specs.some((sp) => sp.id === h)));
      c.chart.setSeries(specs);
      c.refresh();
      charts.set(key, c);
    }
    grid.dataset.loaded = String(Date.now());
  }
  picker.addEventListener("change", () => { if (picker.value && !keys.includes(picker.value)) { keys.push(picker.value); loadCharts(); } picker.value = ""; });
  addRx.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    const m = metricMatcher(addRx.value);
    keys = [...keys, ...meta.keys.filter((k) => m.test(k) && !keys.includes(k))].slice(0, 60);
    loadCharts();
  });
  const restyle = () => { for (const c of charts.values()) c.chart.setOptions(chartOpts()); };
  kind.addEventListener("change", () => { s.set("smooth", kind.value); restyle(); });
  weight.addEventListener("change", () => { s.set("sw", Number(weight.value)); restyle(); });
  xSel.addEventListener("change", async () => { s.set("x", xSel.value); group.reset(); await loadXMetric(); restyle(); });
  bySel.addEventListener("change", () => { s.set("by", bySel.value); loadCharts(); });
  await loadXMetric();
  await loadCharts();

  const withPath = meta.runs.filter((r) => r.path);
  if (withPath.length) pathPlot(pathBox, withPath.map((r) => ({ name: r.name, color: colors.get(r.id), x: r.path.x, y: r.path.y })),
    withPath[0].path.x_key, withPath[0].path.y_key);
  else pathBox.appendChild(el("div", { class: "empty", text: t("compare.noPath") }));
  const without = meta.runs.filter((r) => !r.path);
  if (without.length) missing.append(el("strong", { text: t("compare.pathMissing") }), el("ul", {}, without.map((r) => el("li", { dataset: { run: r.id } }, r.name + ": " + (r.path_missing || "")))));
  const drawDiff = () => {
    const rows = meta.config_diff.filter((r) => !onlyDiff.checked || r.differs);
    clear(diffWrap).appendChild(el("div", { class: "card" }, el("table", { class: "grid diff", id: "config-diff" },
      el("thead", {}, el("tr", {}, el("th", { text: t("compare.key") }), meta.runs.map((r) => el("th", { text: r.name })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, el("td", { class: "mono" }, row.key.split(".").flatMap((part, i) => (i ? [el("wbr"), "." + part] : [part]))),
        row.values.map((x) => el("td", { class: "mono" + (row.differs ? " differs" : ""), text: x === null ? "–" : typeof x === "string" ? x : JSON.stringify(x) }))))),
      rows.length ? null : el("tbody", {}, el("tr", {}, el("td", { class: "muted", text: t("compare.identical") }))))));
  };
  onlyDiff.addEventListener("change", drawDiff);
  drawDiff();
  return () => { for (const c of charts.values()) c.chart.destroy(); };
}
