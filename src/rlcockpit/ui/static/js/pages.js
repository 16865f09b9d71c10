// rlcockpit pages: the runs list and the run page (header, tabs, metric panels, config & meta).
// Samples, diagnosis and compare views live in views.js.

import {
  api, attachTip, clear, debounce, decodeSeries, el, errorBox, fmtAgo, fmtDuration, fmtNum, fmtTime, guideEntry, healthyRange,
  metricTip, PALETTE, runPath, setCrumbs, setLive, severityBadges, statusPill,
} from "./core.js";
import { LineChart } from "./chart.js";
import { renderDiagnosis, renderSamples } from "./views.js";

const LIVE_MS = 2000;
const CHART_POINTS = 1000; // per chart: min/max per bucket, so ~2 points per pixel column
const RUNS_POLL_MS = 3000;
const SEV_COLOR = { critical: "#f85149", warning: "#d29922", info: "#58a6ff" };
const GUARDRAIL_COLOR = "#bc8cff";
const METRIC_LABELS = { reward: "reward", kl: "KL", entropy: "entropy", resp_len: "resp len" };

// ---- runs list --------------------------------------------------------------------------------

export async function renderRuns(root, params) {
  setCrumbs([["Runs", null]]);
  const state = { project: params.get("project") || "", q: params.get("q") || "", status: "", group: "",
    sort: "created_at", desc: true, selected: new Set(), runs: [] };
  const projects = (await api("/api/projects")).projects;
  const projectSel = el("select", { id: "project-filter", on: { change: () => { state.project = projectSel.value; load(); } } },
    el("option", { value: "", text: `All projects (${projects.reduce((a, p) => a + p.runs, 0)})` }),
    projects.map((p) => el("option", { value: p.name, text: `${p.name} (${p.runs})` })));
  projectSel.value = state.project;
  const search = el("input", { type: "search", id: "run-search", placeholder: "Search name, group, tag, id…", value: state.q });
  search.addEventListener("input", debounce(() => { state.q = search.value; draw(); }, 120));
  const statusSel = el("select", { id: "status-filter", on: { change: () => { state.status = statusSel.value; draw(); } } },
    ["", "running", "finished", "failed", "crashed"].map((s) => el("option", { value: s, text: s || "Any status" })));
  const groupSel = el("select", { id: "group-filter", on: { change: () => { state.group = groupSel.value; draw(); } } });
  const compareBtn = el("button", { type: "button", class: "btn primary", id: "compare-btn", disabled: true,
    on: { click: () => { location.hash = "#/compare?runs=" + [...state.selected].map(encodeURIComponent).join(","); } } });
  const countEl = el("span", { class: "muted" });
  root.appendChild(el("div", { class: "toolbar" }, projectSel, search, statusSel, groupSel, el("span", { class: "grow" }),
    countEl, compareBtn));
  const table = el("table", { class: "grid", id: "runs-table" });
  root.appendChild(el("div", { class: "card" }, table));

  const cols = [
    ["", null], ["Name", "name"], ["Status", "status"], ["Group", "group"], ["Tags", null], ["Step", "last_step"],
    ...Object.entries(METRIC_LABELS).map(([k, label]) => [label, "m:" + k]),
    ["Findings", "findings"], ["Created", "created_at"], ["Updated", "updated_at"],
  ];
  const sortVal = (r, key) => key.startsWith("m:") ? r.metrics[key.slice(2)]
    : key === "findings" ? r.findings.critical * 1e6 + r.findings.warning * 1e3 + r.findings.info : r[key];

  function draw() {
    const q = state.q.trim().toLowerCase();
    let rows = state.runs.filter((r) => (!state.status || r.status === state.status) && (!state.group || r.group === state.group)
      && (!q || [r.id, r.name, r.group || "", ...(r.tags || [])].join(" ").toLowerCase().includes(q)));
    rows = rows.slice().sort((a, b) => {
      const va = sortVal(a, state.sort), vb = sortVal(b, state.sort);
      const cmp = va === vb ? 0 : va === null || va === undefined ? 1 : vb === null || vb === undefined ? -1 : va < vb ? -1 : 1;
      return state.desc ? -cmp : cmp;
    });
    const head = el("tr", {}, cols.map(([label, key]) => el("th", {
      text: label + (key && state.sort === key ? (state.desc ? " ▾" : " ▴") : ""),
      on: key ? { click: () => { state.desc = state.sort === key ? !state.desc : true; state.sort = key; draw(); } } : {} })));
    const body = el("tbody");
    const now = Date.now() / 1000;
    for (const r of rows) {
      const box = el("input", { type: "checkbox", class: "run-select", checked: state.selected.has(r.id),
        on: { change: () => { box.checked ? state.selected.add(r.id) : state.selected.delete(r.id); updateCompare(); tr.classList.toggle("selected", box.checked); } } });
      const tr = el("tr", { class: state.selected.has(r.id) ? "selected" : "", dataset: { run: r.id } },
        el("td", {}, box),
        el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id), class: "run-link", text: r.name }),
          el("div", { class: "muted mono", text: r.id.slice(0, 12) + (state.project ? "" : "  · " + r.project) })),
        el("td", {}, statusPill(r.status)),
        el("td", { text: r.group || "" }),
        el("td", {}, (r.tags || []).map((t) => el("span", { class: "tag", text: t }))),
        el("td", { class: "num", text: r.last_step ?? "–" }),
        Object.keys(METRIC_LABELS).map((k) => el("td", { class: "num", text: fmtNum(r.metrics[k]) })),
        el("td", {}, severityBadges(r.findings)),
        el("td", { class: "muted", text: fmtTime(r.created_at) }),
        el("td", { class: "muted", text: fmtAgo(r.updated_at, now) }));
      body.appendChild(tr);
    }
    clear(table).append(el("thead", {}, head), body);
    if (!rows.length) body.appendChild(el("tr", {}, el("td", { colspan: cols.length, class: "empty",
      text: state.runs.length ? "No run matches the filters." : "No runs in this store yet. Start one with rlcockpit.init(...)." })));
    countEl.textContent = `${rows.length} of ${state.runs.length} runs`;
    updateCompare();
  }
  function updateCompare() {
    compareBtn.textContent = `Compare selected (${state.selected.size})`;
    compareBtn.disabled = state.selected.size < 2;
  }
  async function load() {
    const data = await api("/api/runs", { project: state.project });
    state.runs = data.runs;
    const groups = [...new Set(state.runs.map((r) => r.group).filter(Boolean))].sort();
    const keep = state.group;
    clear(groupSel).append(el("option", { value: "", text: "Any group" }), ...groups.map((g) => el("option", { value: g, text: g })));
    groupSel.value = groups.includes(keep) ? keep : "";
    state.group = groupSel.value;
    draw();
  }
  await load();
  const timer = setInterval(() => { if (!document.hidden) load().catch(() => {}); }, RUNS_POLL_MS);
  return () => clearInterval(timer);
}

// ---- run page ---------------------------------------------------------------------------------

export async function renderRun(root, id, tab, params) {
  const detail = await api(runPath(id));
  const run = detail.run;
  setCrumbs([["Runs", "#/?project=" + encodeURIComponent(run.project)], [run.project, "#/?project=" + encodeURIComponent(run.project)], [run.name, null]]);
  const head = el("div", { class: "run-head" });
  const drawHead = () => {
    const dur = (run.finished_at || detail.now) - run.created_at;
    clear(head).append(el("h1", { text: run.name, id: "run-name" }), statusPill(run.status),
      el("span", { class: "meta" }, el("span", { class: "mono", text: run.id }), run.group ? el("span", { text: "group " + run.group }) : null,
        el("span", { text: "step " + (run.last_step ?? "–") }), el("span", { text: "started " + fmtTime(run.created_at) }),
        el("span", { text: "duration " + fmtDuration(dur) })),
      el("span", {}, (run.tags || []).map((t) => el("span", { class: "tag", text: t }))),
      el("span", { class: "grow" }), el("span", {}, severityBadges(detail.finding_counts)));
  };
  drawHead();
  const base = "#/run/" + encodeURIComponent(run.id);
  const tabs = [["charts", "Charts"], ["samples", `Samples (${detail.sample_steps.length} steps)`], ["diagnosis", "Diagnosis"], ["config", "Config & meta"]];
  root.append(head, el("nav", { class: "tabs" }, tabs.map(([k, label]) =>
    el("a", { href: k === "charts" ? base : base + "/" + k, class: k === tab ? "active" : "", id: "tab-" + k, text: label }))));
  const body = el("div");
  root.appendChild(body);
  if (tab === "samples") return renderSamples(body, detail, params);
  if (tab === "diagnosis") return renderDiagnosis(body, detail);
  if (tab === "config") { renderConfig(body, detail); return () => {}; }
  return renderCharts(body, detail, () => drawHead());
}

function markersFor(detail) {
  const out = [];
  for (const f of detail.findings) {
    if (f.step === null || f.step === undefined) continue;
    out.push({ step: f.step, color: SEV_COLOR[f.severity] || SEV_COLOR.info, dash: [4, 3],
      label: `${f.severity}: ${f.title} (${f.detector || "finding"})` });
  }
  for (const e of detail.events) {
    if (e.kind !== "guardrail" || e.step === null || e.step === undefined) continue;
    const p = e.payload || {};
    out.push({ step: e.step, color: GUARDRAIL_COLOR, dash: [1, 3], shape: "diamond",
      label: "guardrail: " + (p.action || p.title || p.rule || p.name || JSON.stringify(p).slice(0, 80)) });
  }
  return out;
}

function renderCharts(body, detail, onRunUpdate) {
  const run = detail.run;
  const charts = new Map();
  const opts = { smoothing: 0, log: false, xMode: "step", t0: run.created_at, markers: markersFor(detail) };
  const filter = el("input", { type: "search", id: "metric-filter", placeholder: "Filter metrics…" });
  const smooth = el("input", { type: "range", id: "smoothing", min: 0, max: 0.99, step: 0.01, value: 0 });
  const smoothVal = el("span", { class: "mono", text: "0.00" });
  const logBox = el("input", { type: "checkbox", id: "log-scale" });
  const xSel = el("select", { id: "x-axis" }, [["step", "Step"], ["time", "Wall time"], ["relative", "Relative time"]]
    .map(([v, t]) => el("option", { value: v, text: t })));
  const markBox = el("input", { type: "checkbox", id: "show-markers", checked: true });
  const apply = () => { for (const c of charts.values()) c.chart.setOptions({ smoothing: opts.smoothing, log: opts.log, xMode: opts.xMode, markers: markBox.checked ? opts.markers : [] }); };
  smooth.addEventListener("input", () => { opts.smoothing = Number(smooth.value); smoothVal.textContent = opts.smoothing.toFixed(2); apply(); });
  logBox.addEventListener("change", () => { opts.log = logBox.checked; apply(); });
  xSel.addEventListener("change", () => { opts.xMode = xSel.value; apply(); });
  markBox.addEventListener("change", apply);
  filter.addEventListener("input", debounce(() => {
    const q = filter.value.trim().toLowerCase();
    for (const [key, c] of charts) c.card.hidden = q && !key.toLowerCase().includes(q);
    body.querySelectorAll(".group").forEach((g) => { g.hidden = !g.querySelector(".chart-card:not([hidden])"); });
  }, 100));
  body.appendChild(el("div", { class: "toolbar" }, filter, el("label", {}, "Smoothing", smooth, smoothVal),
    el("label", {}, logBox, "Log scale"), el("label", {}, "X axis", xSel), el("label", {}, markBox, "Findings & guardrails"),
    el("span", { class: "grow" }), el("span", { class: "muted", id: "point-info" })));
  if (!detail.groups.length) body.appendChild(el("div", { class: "empty", text: "No metrics logged yet." }));

  for (const g of detail.groups) {
    const grid = el("div", { class: "charts" });
    const title = el("div", { class: "group-title" }, g.group, el("span", { class: "count", text: `${g.keys.length}` }));
    title.addEventListener("click", () => { grid.hidden = !grid.hidden; });
    body.appendChild(el("section", { class: "group", dataset: { group: g.group } }, title, grid));
    for (const key of g.keys) {
      const name = el("span", { class: "name metric-name" + (guideEntry(key) ? " known" : ""), text: key });
      attachTip(name, () => metricTip(key));
      const last = el("span", { class: "last" });
      const card = el("div", { class: "chart-card", dataset: { key } }, el("div", { class: "chart-title" }, name, last));
      grid.appendChild(card);
      const chart = new LineChart(card, Object.assign({}, opts, { healthy: healthyRange(key) }));
      charts.set(key, { chart, card, last });
    }
  }
  const keys = [...charts.keys()];
  let cursor = null;
  const setLast = (key) => { const c = charts.get(key); c.last.textContent = fmtNum(c.chart.lastValue()); };
  const load = async () => {
    const batches = [];
    for (let i = 0; i < keys.length; i += 50) batches.push(keys.slice(i, i + 50));
    const results = await Promise.all(batches.map((b) => api(runPath(run.id) + "/series", { keys: b.join(","), max_points: CHART_POINTS, format: "b64" })));
    for (const res of results) {
      cursor = cursor === null ? res.last_step : Math.min(cursor, res.last_step ?? cursor);
      for (const [key, s] of Object.entries(res.series)) {
        charts.get(key).chart.setSeries([{ name: key, color: PALETTE[0], ...decodeSeries(s) }]);
        setLast(key);
      }
    }
    body.dataset.loaded = "1";
  };
  load().catch((e) => body.prepend(errorBox(e)));

  // live: poll only what is new (since=cursor) while the run is running
  let timer = null, findingCount = detail.findings.length, eventCount = detail.events.length, busy = false;
  const tick = async () => {
    if (busy || document.hidden || cursor === null || !keys.length) return;
    busy = true;
    try {
      const res = await api(runPath(run.id) + "/series", { keys: keys.join(","), since: cursor, max_points: 5000, format: "b64" });
      let added = 0;
      for (const [key, s] of Object.entries(res.series)) { const n = charts.get(key).chart.append(key, decodeSeries(s)); if (n) { added += n; setLast(key); } }
      if (res.last_step !== null && res.last_step !== undefined) cursor = res.last_step;
      run.status = res.status; run.last_step = res.last_step; detail.now = Date.now() / 1000;
      if (res.finding_count !== findingCount || res.event_count !== eventCount) {
        const d2 = await api(runPath(run.id));
        Object.assign(detail, { findings: d2.findings, events: d2.events, finding_counts: d2.finding_counts });
        findingCount = d2.findings.length; eventCount = d2.events.length;
        opts.markers = markersFor(detail); apply();
      }
      onRunUpdate();
      document.getElementById("point-info").textContent = added ? `+${added} points` : "";
      if (run.status !== "running") { clearInterval(timer); setLive(false); }
    } catch (e) { /* transient: try again next tick */ } finally { busy = false; }
  };
  if (run.status === "running") { setLive(true); timer = setInterval(tick, LIVE_MS); }
  return () => { clearInterval(timer); for (const c of charts.values()) c.chart.destroy(); };
}

// ---- config & meta ----------------------------------------------------------------------------

function flatten(obj, prefix = "", out = {}) {
  if (obj && typeof obj === "object" && !Array.isArray(obj) && Object.keys(obj).length) {
    for (const [k, v] of Object.entries(obj)) flatten(v, prefix ? prefix + "." + k : k, out);
  } else if (prefix) out[prefix] = obj;
  return out;
}

function kvTable(obj, id) {
  const flat = flatten(obj || {});
  const box = el("div", { class: "kv", id });
  const keys = Object.keys(flat).sort();
  if (!keys.length) return el("div", { class: "muted", text: "(empty)" });
  for (const k of keys) {
    const v = flat[k];
    box.append(el("div", { class: "k", text: k }), el("div", { class: "v", text: typeof v === "string" ? v
      : typeof v === "number" && !Number.isInteger(v) ? String(Number(v.toPrecision(6))) : JSON.stringify(v) }));
  }
  return box;
}

function renderConfig(body, detail) {
  const run = detail.run, meta = run.meta || {};
  const card = (title, ...content) => el("div", { class: "card" }, el("h3", { text: title }), el("div", { class: "card-body" }, ...content));
  const command = Array.isArray(meta.command) ? meta.command.join(" ") : meta.command;
  const git = meta.git || {};
  const pk = meta.packages || {};
  const pkRows = Object.keys(pk).sort().map((k) => el("tr", {}, el("td", { class: "mono", text: k }), el("td", { class: "mono", text: String(pk[k]) })));
  const rest = Object.fromEntries(Object.entries(meta).filter(([k]) => !["command", "git", "packages"].includes(k)));
  body.appendChild(el("div", { class: "two-col" },
    el("div", {}, card("Config", kvTable(run.config, "config-table"))),
    el("div", {},
      card("Command", el("pre", { class: "block", id: "run-command", text: command || "(not recorded)" })),
      card("Git", typeof git === "object" ? kvTable(Object.fromEntries(Object.entries(git).filter(([k]) => k !== "diff")), "git-table")
        : el("div", { class: "mono", text: String(git) }),
      typeof git === "object" && git.diff ? el("details", {}, el("summary", { class: "muted", text: `uncommitted diff (${String(git.diff).split("\n").length} lines)` }),
        el("pre", { class: "block", text: String(git.diff) })) : null),
      card("Packages", pkRows.length ? el("table", { class: "grid" }, el("tbody", {}, pkRows)) : el("div", { class: "muted", text: "(not recorded)" })),
      card("Host & process", kvTable(rest)),
      card("Summary", kvTable(run.summary)))));
}
