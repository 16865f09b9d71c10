// Sweep pages. #/sweeps: every sweep of the store. #/sweep/<id>: the sweep's head (method, metric, state, best
// trial), the best-so-far curve, parallel coordinates (one axis per searched parameter plus the metric, one line
// per trial, coloured by its value), the trial table (sortable, rows link to the runs) and the importance panel
// (permutation importance as the ranking, W&B's forest importance and correlation beside it).

import { api, clear, cssVar, el, errorBox, fmtDuration, fmtNum, fmtTime, fmtValue, setCrumbs, showTip, hideTip, statusPill } from "./core.js";
import { t } from "./i18n.js";
import { Chart } from "./chart.js";
import { settings } from "./state.js";

const enc = encodeURIComponent;
const STATE_PILL = { finished: "finished", failed: "failed", crashed: "crashed", stopped: "stopped", killed: "stopped", running: "running" };

function trialPill(state) {
  return el("span", { class: "pill " + (STATE_PILL[state] || state), text: t("sweep.state." + state) });
}

export async function renderSweeps(root, params) {
  setCrumbs([[t("nav.runs"), "#/"], [t("nav.sweeps"), null]]);
  const data = await api("/api/sweeps", { project: params.get("project") || "" });
  const table = el("table", { class: "grid", id: "sweeps-table" });
  const head = el("tr", {}, ["sweeps.col.sweep", "sweeps.col.project", "sweeps.col.method", "sweeps.col.state",
    "sweeps.col.trials", "sweeps.col.metric", "sweeps.col.best", "sweeps.col.created"].map((k) => el("th", { text: t(k) })));
  const body = el("tbody");
  for (const s of data.sweeps) {
    const metric = s.metric ? `${s.metric.name} (${t("sweep.goal." + s.metric.goal)})` : "–";
    body.appendChild(el("tr", { dataset: { sweep: s.id } },
      el("td", {}, el("a", { href: "#/sweep/" + enc(s.id), class: "sweep-link mono", text: s.id }), s.name ? el("div", { class: "muted", text: s.name }) : null),
      el("td", { text: s.project }), el("td", { text: s.method }), el("td", {}, trialPill(s.state)),
      el("td", { class: "num", text: s.trials }), el("td", { class: "mono", text: metric }),
      el("td", { class: "num", text: s.best ? fmtNum(s.best.value) : "–" }), el("td", { class: "muted", text: fmtTime(s.created_at) })));
  }
  if (!data.sweeps.length) body.appendChild(el("tr", {}, el("td", { colspan: 8, class: "empty", text: t("sweeps.empty") })));
  table.append(el("thead", {}, head), body);
  root.appendChild(el("div", { class: "card" }, table));
  return null;
}

export async function renderSweep(root, id, params) {
  const sw = await api("/api/sweeps/" + enc(id));
  setCrumbs([[t("nav.runs"), "#/"], [t("nav.sweeps"), "#/sweeps"], [sw.name || sw.id, null]]);
  root.appendChild(sweepHead(sw));
  const curveBox = el("div", { class: "chart-box", id: "best-so-far" });
  const pcBox = el("div", { class: "pc-box", id: "parallel-coords" });
  root.append(el("div", { class: "two-col" },
    el("div", { class: "card card-body" }, el("div", { class: "group-title", text: t("sweep.bestSoFar") }), curveBox,
      el("div", { class: "curve-legend", text: t("sweep.bestSoFar.legend") })),
    el("div", { class: "card card-body" }, el("div", { class: "group-title", text: t("sweep.parallel") }), pcBox,
      el("div", { class: "pc-legend", text: t("sweep.parallel.legend") }))));
  const tableBox = el("div", { class: "card", id: "trials-card" });
  const impBox = el("div", { class: "card card-body", id: "importance-card" });
  root.append(el("div", { class: "group-title sweep-section", text: t("sweep.trials") }), tableBox,
    el("div", { class: "group-title sweep-section", text: t("sweep.importance") }), impBox);
  const chart = bestSoFarChart(curveBox, sw);
  const pc = parallelCoordinates(pcBox, sw.parallel);
  trialTable(tableBox, sw);
  await importancePanel(impBox, sw, params);
  return () => { if (chart) chart.destroy(); pc.dispose(); };
}

function sweepHead(sw) {
  const m = sw.metric;
  const counts = Object.entries(sw.counts).filter(([, n]) => n).map(([k, n]) => `${t("sweep.state." + k)} ${n}`).join(" · ");
  const kv = el("div", { class: "kv", id: "sweep-kv" },
    el("span", { class: "muted", text: t("sweep.method") }), el("span", { text: sw.method + (sw.method === "bayes" ? ` (${sw.sampler})` : "") }),
    el("span", { class: "muted", text: t("sweep.metric") }), el("span", { class: "mono", text: m ? `${m.name} · ${t("sweep.goal." + m.goal)}` + (m.target !== null ? ` · ${t("sweep.target")} ${fmtNum(m.target)}` : "") : "–" }),
    el("span", { class: "muted", text: t("sweep.trialsCount") }), el("span", { text: counts || "0" }),
    el("span", { class: "muted", text: t("sweep.project") }), el("span", { text: sw.project }),
    el("span", { class: "muted", text: t("sweep.agents") }), el("span", { text: String(sw.agents.length) }),
    el("span", { class: "muted", text: t("sweep.seed") }), el("span", { class: "mono", text: String(sw.seed) }));
  const best = sw.best ? el("div", { id: "best-trial" }, el("span", { class: "muted", text: t("sweep.best") + " " }),
    el("a", { href: "#/run/" + enc(sw.best.run_id), text: `#${sw.best.number} (${sw.best.run_id})` }),
    el("span", { class: "mono", text: "  " + (m ? m.name + " = " : "") + fmtNum(sw.best.value) })) : null;
  return el("div", { class: "card card-body sweep-head" },
    el("div", { class: "run-head" }, el("h2", { class: "mono", text: sw.name || sw.id }), trialPill(sw.state),
      sw.reason ? el("span", { class: "muted", id: "sweep-reason", text: sw.reason }) : null), kv, best);
}

function bestSoFarChart(box, sw) {
  if (!sw.metric) { box.appendChild(el("div", { class: "empty", text: t("sweep.noMetric") })); return null; }
  const pts = sw.best_so_far;
  const steps = pts.map((p) => p.number);
  const chart = new Chart(box, { height: 220 });
  chart.setSeries([
    { id: "value", name: t("sweep.trialValue"), color: cssVar("--muted") || "#8b95a3", steps, values: pts.map((p) => p.value), ts: [], nonfinite: [] },
    { id: "best", name: t("sweep.best"), color: "#3fb950", steps, values: pts.map((p) => p.best), ts: [], nonfinite: [] },
  ]);
  box.dataset.points = String(pts.filter((p) => p.value !== null).length);
  return chart;
}

// ---- parallel coordinates ---------------------------------------------------------------------------

function axisScale(axis, lines, i) {
  if (axis.type === "categorical") {
    const n = Math.max(1, axis.values.length - 1);
    return (v) => (axis.values.indexOf(String(v)) / n);
  }
  const vals = lines.map((l) => l.values[i]).filter((v) => typeof v === "number" && Number.isFinite(v) && (axis.scale !== "log" || v > 0));
  const f = axis.scale === "log" ? Math.log10 : (v) => v;
  const lo = Math.min(...vals.map(f)), hi = Math.max(...vals.map(f));
  return (v) => (typeof v !== "number" || !Number.isFinite(v) || (axis.scale === "log" && v <= 0) ? null : hi === lo ? 0.5 : (f(v) - lo) / (hi - lo));
}

function parallelCoordinates(box, pc) {
  if (!pc.lines.length || pc.axes.length < 2) {
    box.appendChild(el("div", { class: "empty", text: t("sweep.noTrials") }));
    return { dispose() {} };
  }
  const canvas = el("canvas", { class: "pc-canvas" });
  box.appendChild(canvas);
  const scales = pc.axes.map((a, i) => axisScale(a, pc.lines, i));
  const metricAxis = pc.axes.findIndex((a) => a.metric);
  const goalMax = metricAxis >= 0 && pc.axes[metricAxis].goal === "maximize";
  const colorOf = (line) => {
    if (metricAxis < 0) return "#4c8dff";
    const u = scales[metricAxis](line.values[metricAxis]);
    if (u === null) return "rgba(139,149,163,.5)";
    const g = goalMax ? u : 1 - u; // 1 = best
    return `hsl(${Math.round(10 + 110 * g)}, 70%, ${Math.round(45 + 10 * g)}%)`;
  };
  let geometry = null;
  const draw = () => {
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(240, box.clientWidth), height = 240;
    canvas.width = width * dpr; canvas.height = height * dpr;
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    const pad = { l: 30, r: 30, t: 28, b: 18 };
    const xs = pc.axes.map((_, i) => pad.l + (i * (width - pad.l - pad.r)) / (pc.axes.length - 1));
    const yOf = (u) => pad.t + (1 - u) * (height - pad.t - pad.b);
    const muted = cssVar("--muted") || "#8b95a3";
    ctx.font = "11px sans-serif"; ctx.textAlign = "center";
    pc.axes.forEach((a, i) => {
      ctx.strokeStyle = muted; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(xs[i], yOf(1)); ctx.lineTo(xs[i], yOf(0)); ctx.stroke();
      ctx.fillStyle = cssVar("--text") || "#ddd";
      ctx.fillText(a.name.length > 22 ? "…" + a.name.slice(-21) : a.name, xs[i], 12);
      if (a.type === "categorical") {
        ctx.fillStyle = muted; ctx.textAlign = "left";
        a.values.forEach((v, j) => ctx.fillText(v, xs[i] + 3, yOf(j / Math.max(1, a.values.length - 1)) + 4));
        ctx.textAlign = "center";
      }
    });
    const paths = [];
    for (const line of pc.lines) {
      const pts = line.values.map((v, i) => { const u = scales[i](v); return u === null ? null : [xs[i], yOf(u)]; });
      ctx.strokeStyle = colorOf(line); ctx.lineWidth = 1.5; ctx.globalAlpha = 0.85;
      ctx.beginPath();
      let started = false;
      for (const p of pts) { if (!p) { started = false; continue; } if (started) ctx.lineTo(p[0], p[1]); else { ctx.moveTo(p[0], p[1]); started = true; } }
      ctx.stroke();
      paths.push({ line, pts });
    }
    ctx.globalAlpha = 1;
    geometry = { paths };
    canvas.dataset.lines = String(paths.length);
  };
  const onMove = (e) => {
    if (!geometry) return;
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    let best = null, dist = 12;
    for (const { line, pts } of geometry.paths) {
      for (const p of pts) if (p && Math.hypot(p[0] - x, p[1] - y) < dist) { dist = Math.hypot(p[0] - x, p[1] - y); best = line; }
    }
    if (!best) { hideTip(); return; }
    showTip(el("div", { class: "chart-tip" }, el("div", { text: `#${best.number} · ${best.run_id} · ${t("sweep.state." + best.state)}` }),
      pc.axes.map((a, i) => el("div", { text: `${a.name}: ${fmtValue(best.values[i])}` }))), e.clientX, e.clientY);
  };
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseleave", hideTip);
  const resize = new ResizeObserver(() => draw());
  resize.observe(box);
  draw();
  return { dispose() { resize.disconnect(); hideTip(); } };
}

// ---- trial table ------------------------------------------------------------------------------------

function trialTable(box, sw) {
  const s = settings("sweep", { tsort: "number", tdesc: false });
  const keys = [...new Set(sw.trials.flatMap((r) => Object.keys(r.params_flat)))].filter((k) =>
    new Set(sw.trials.map((r) => JSON.stringify(r.params_flat[k]))).size > 1 || sw.trials.length === 1);
  const metric = sw.metric ? sw.metric.name : null;
  const cols = [["#", "number"], [t("sweep.col.run"), "run_id"], [t("sweep.col.state"), "state"],
    ...(metric ? [[metric, "best"], [t("sweep.col.latest"), "latest"]] : []),
    ...keys.map((k) => [k, "p:" + k]), [t("sweep.col.duration"), "duration_s"], [t("sweep.col.reason"), "reason"]];
  const val = (r, k) => (k.startsWith("p:") ? r.params_flat[k.slice(2)] : r[k]);
  const table = el("table", { class: "grid", id: "trials-table" });
  const draw = () => {
    const { tsort, tdesc } = s.values;
    const rows = sw.trials.slice().sort((a, b) => {
      const va = val(a, tsort), vb = val(b, tsort);
      const na = va === null || va === undefined, nb = vb === null || vb === undefined;
      if (na || nb) return na && nb ? 0 : na ? 1 : -1;
      const c = va === vb ? 0 : va < vb ? -1 : 1;
      return tdesc ? -c : c;
    });
    const head = el("tr", {}, cols.map(([label, key]) => el("th", { dataset: { sort: key }, text: label + (tsort === key ? (tdesc ? " ▾" : " ▴") : ""),
      on: { click: () => { s.set("tdesc", tsort === key ? !tdesc : key === "best" && sw.metric && sw.metric.goal === "maximize"); s.set("tsort", key); draw(); } } })));
    const body = el("tbody");
    for (const r of rows) {
      body.appendChild(el("tr", { dataset: { trial: r.number }, class: sw.best && sw.best.number === r.number ? "selected" : "" },
        el("td", { class: "num", text: r.number }),
        el("td", {}, el("a", { href: "#/run/" + enc(r.run_id), class: "mono run-link", text: r.run_id })),
        el("td", {}, trialPill(r.state)),
        metric ? [el("td", { class: "num", text: fmtNum(r.best) }), el("td", { class: "num", text: fmtNum(r.latest) })] : null,
        keys.map((k) => el("td", { class: "num", text: fmtValue(r.params_flat[k]) })),
        el("td", { class: "num", text: fmtDuration(r.duration_s) }),
        el("td", { class: "muted", text: r.reason || "" })));
    }
    if (!rows.length) body.appendChild(el("tr", {}, el("td", { colspan: cols.length, class: "empty", text: t("sweep.noTrials") })));
    clear(table).append(el("thead", {}, head), body);
  };
  draw();
  box.appendChild(table);
}

// ---- importance panel -------------------------------------------------------------------------------

async function importancePanel(box, sw, params) {
  const input = el("input", { type: "search", id: "importance-metric", class: "expr", value: params.get("metric") || (sw.metric ? sw.metric.name : ""),
    placeholder: t("sweep.importance.metric") });
  const out = el("div", { id: "importance-body" });
  box.append(el("div", { class: "toolbar" }, el("span", { class: "muted", text: t("sweep.importance.metric") }), input), out);
  const load = async () => {
    clear(out).appendChild(el("div", { class: "muted", text: "…" }));
    let res;
    try { res = await api("/api/sweeps/" + enc(sw.id) + "/importance", { metric: input.value.trim() }); } catch (e) { clear(out).appendChild(errorBox(e)); return; }
    clear(out);
    if (res.error) { out.appendChild(el("div", { class: "muted", id: "importance-error", text: res.error })); return; }
    const r2 = res.model && res.model.r2_oob !== null && res.model.r2_oob !== undefined ? res.model.r2_oob : null;
    out.appendChild(el("div", { class: "muted", id: "importance-note", text: t("sweep.importance.note", { n: res.n_used, missing: res.excluded_missing_metric || 0,
      r2: r2 === null ? "–" : fmtNum(r2) }) }));
    const table = el("table", { class: "grid", id: "importance-table" });
    table.appendChild(el("thead", {}, el("tr", {}, ["sweep.imp.param", "sweep.imp.permutation", "sweep.imp.importance", "sweep.imp.correlation", "sweep.imp.effect"]
      .map((k) => el("th", { text: t(k), title: t(k + ".title") })))));
    const body = el("tbody");
    const top = Math.max(1e-9, ...res.parameters.map((p) => Math.max(0, p.permutation)));
    for (const p of res.parameters) {
      const bar = el("span", { class: "score" }, el("span", { style: { width: `${Math.round(100 * Math.max(0, p.permutation) / top)}%` } }));
      body.appendChild(el("tr", { dataset: { key: p.key } },
        el("td", { class: "mono", text: p.key + (p.aliases.length ? ` (= ${p.aliases.join(", ")})` : "") }),
        el("td", { class: "num" }, bar, " " + fmtNum(p.permutation)),
        el("td", { class: "num", text: fmtNum(p.importance) }),
        el("td", { class: "num", text: p.correlation === null ? (p.levels ? p.levels.map((l) => `${l.value} ${fmtNum(l.correlation)}`).join(" · ") : "–") : fmtNum(p.correlation) }),
        el("td", { class: "muted", text: p.direction || "" })));
    }
    table.appendChild(body);
    out.appendChild(table);
    box.dataset.loaded = String(Date.now());
  };
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") load(); });
  await load();
}
