// rlcockpit views: samples (step slider, search, repeated-span highlighting, two-step comparison),
// diagnosis (root-cause chain, findings, overrides to copy) and compare (overlays, reward-vs-KL
// paths, config diff). Model outputs are rendered with text nodes only (see core.js).

import {
  api, attachTip, clear, copyText, debounce, decodeSeries, el, errorBox, fmtNum, metricTip, PALETTE, runPath, setCrumbs,
} from "./core.js";
import { LineChart, PathChart } from "./chart.js";

// ---- samples ----------------------------------------------------------------------------------

/** Text with repeated spans (<span class=rep>) and search hits (<mark>), built from text nodes only. */
export function highlighted(text, repeats, query) {
  const frag = document.createDocumentFragment();
  if (text === null || text === undefined) { frag.appendChild(el("span", { class: "muted", text: "–" })); return frag; }
  text = String(text);
  const hits = [];
  if (query) {
    const t = text.toLowerCase(), q = query.toLowerCase();
    for (let i = t.indexOf(q); i >= 0 && hits.length < 200; i = t.indexOf(q, i + q.length)) hits.push([i, i + q.length]);
  }
  const cuts = new Set([0, text.length]);
  for (const [s, e] of [...(repeats || []), ...hits]) { cuts.add(Math.min(s, text.length)); cuts.add(Math.min(e, text.length)); }
  const points = [...cuts].sort((a, b) => a - b);
  const inside = (spans, a) => spans.some(([s, e]) => a >= s && a < e);
  for (let i = 0; i + 1 < points.length; i++) {
    const a = points[i], b = points[i + 1];
    if (a === b) continue;
    const piece = text.slice(a, b);
    let node = document.createTextNode(piece);
    if (inside(hits, a)) node = el("mark", { class: "hit" }, node);
    if (inside(repeats || [], a)) node = el("span", { class: "rep", title: "repeated span" }, node);
    frag.appendChild(node);
  }
  return frag;
}

function textCell(text, repeats, query) {
  const td = el("td", { class: "text" }, el("div", { class: "clamp" }, highlighted(text, repeats, query)));
  if (text && String(text).length > 400) {
    const more = el("div", { class: "more", text: "expand" });
    more.addEventListener("click", () => { td.classList.toggle("open"); more.textContent = td.classList.contains("open") ? "collapse" : "expand"; });
    td.appendChild(more);
  }
  return td;
}

export async function renderSamples(body, detail, params) {
  const run = detail.run, steps = detail.sample_steps;
  if (!steps.length) { body.appendChild(el("div", { class: "empty", text: "No samples logged for this run (run.log_samples)." })); return () => {}; }
  const state = { idx: steps.length - 1, q: params.get("q") || "", all: false };
  const slider = el("input", { type: "range", id: "step-slider", min: 0, max: steps.length - 1, step: 1, value: state.idx });
  const stepLabel = el("span", { class: "mono", id: "step-label" });
  const prev = el("button", { type: "button", class: "btn small", text: "◀", on: { click: () => move(-1) } });
  const next = el("button", { type: "button", class: "btn small", text: "▶", on: { click: () => move(1) } });
  const search = el("input", { type: "search", id: "sample-search", placeholder: "Search prompts and responses…", value: state.q });
  const allBox = el("input", { type: "checkbox", id: "search-all" });
  const stepA = el("select", { id: "cmp-a" }, steps.map((s) => el("option", { value: s, text: "step " + s })));
  const stepB = el("select", { id: "cmp-b" }, steps.map((s) => el("option", { value: s, text: "step " + s })));
  stepA.value = String(steps[0]); stepB.value = String(steps[steps.length - 1]);
  const cmpBtn = el("button", { type: "button", class: "btn", id: "cmp-btn", text: "Compare prompts", on: { click: () => compare() } });
  body.append(el("div", { class: "toolbar" },
    el("div", { class: "slider-row" }, "Step", prev, slider, next, stepLabel), search, el("label", {}, allBox, "all steps"),
    el("span", { class: "grow" }), el("label", {}, "Same prompt at", stepA, "vs", stepB), cmpBtn));
  const out = el("div", { id: "samples-out" });
  body.appendChild(out);

  function move(d) { state.idx = Math.max(0, Math.min(steps.length - 1, state.idx + d)); slider.value = state.idx; load(); }
  slider.addEventListener("input", () => { state.idx = Number(slider.value); stepLabel.textContent = `${steps[state.idx]}`; });
  slider.addEventListener("change", () => load());
  search.addEventListener("input", debounce(() => { state.q = search.value.trim(); load(); }, 200));
  allBox.addEventListener("change", () => { state.all = allBox.checked; load(); });

  async function load() {
    stepLabel.textContent = `${steps[state.idx]}  (${state.idx + 1}/${steps.length})`;
    const data = await api(runPath(run.id) + "/samples", { step: state.all && state.q ? "all" : steps[state.idx], q: state.q, limit: 200 });
    const cols = data.columns.filter((c) => c !== "idx");
    const table = el("table", { class: "grid samples", id: "samples-table" },
      el("thead", {}, el("tr", {}, cols.map((c) => el("th", { text: c })), el("th", { text: "repeat" }))));
    const tb = el("tbody");
    for (const row of data.rows) {
      tb.appendChild(el("tr", {}, cols.map((c) => {
        if (c === "prompt") return textCell(row.prompt, [], state.q);
        if (c === "response") return textCell(row.response, row._repeats, state.q);
        const v = row[c];
        const text = typeof v === "number" ? fmtNum(v) : v === null || v === undefined ? "–" : typeof v === "string" ? v : JSON.stringify(v);
        return typeof v === "number" ? el("td", { class: "num", text }) : textCell(text, [], state.q);
      }), el("td", { class: "num", text: row._repeat_ratio ? Math.round(row._repeat_ratio * 100) + "%" : "" })));
    }
    table.appendChild(tb);
    clear(out).append(el("div", { class: "muted", text: `${data.rows.length}${data.more ? "+" : ""} rows` + (state.q ? ` matching “${state.q}”` : "") }), table);
    if (!data.rows.length) out.appendChild(el("div", { class: "empty", text: "No samples match." }));
  }

  async function compare() {
    const data = await api(runPath(run.id) + "/samples/compare", { a: stepA.value, b: stepB.value, limit: 50 });
    clear(out).appendChild(el("div", { class: "muted", id: "cmp-summary",
      text: `${data.total} prompt(s) logged at both step ${data.a} and step ${data.b}` }));
    for (const p of data.pairs) {
      const col = (rows, step) => el("div", { class: "col" }, rows.map((r) => el("div", {},
        el("div", { class: "r", text: `step ${step} · reward ${fmtNum(r.reward)}` }), highlighted(r.response, r._repeats, ""))));
      out.append(el("div", { class: "card" }, el("div", { class: "card-body" },
        el("div", { class: "mono", text: p.prompt }), el("div", { class: "cmp-pair" }, col(p.a, data.a), col(p.b, data.b)))));
    }
    if (!data.pairs.length) out.appendChild(el("div", { class: "empty", text: "No prompt was logged at both steps." }));
  }
  await load();
  return () => {};
}

// ---- diagnosis --------------------------------------------------------------------------------

function copyBlock(title, lines, id) {
  const text = lines.join("\n");
  const status = el("span", { class: "muted" });
  const btn = el("button", { type: "button", class: "btn small", id, text: "Copy", on: { click: async () => {
    status.textContent = (await copyText(text)) ? "copied" : "copy failed: select the text";
  } } });
  return el("div", {}, el("div", { class: "copy-row" }, el("strong", { text: title }), el("span", {}, status, " ", btn)),
    el("pre", { class: "block overrides", text: text }));
}

function describe(v) { return typeof v === "string" ? v : v && (v.title || v.summary || v.text) ? (v.title || v.summary || v.text) : JSON.stringify(v); }

function findingCard(f) {
  const box = el("div", { class: "finding " + (f.severity || "info") },
    el("h4", {}, el("span", { class: "sev " + (f.severity || "info"), text: (f.severity || "info")[0].toUpperCase() }), " ", f.title || "(untitled)"),
    el("div", { class: "sub" }, `${f.detector || ""} · step ${f.step_start ?? f.step}` + (f.step_end !== undefined && f.step_end !== f.step_start ? `–${f.step_end}` : "")
      + (f.metric ? " · " : ""), f.metric ? (() => { const m = el("span", { class: "mono", text: f.metric }); attachTip(m, () => metricTip(f.metric)); return m; })() : null));
  if (f.summary) box.appendChild(el("p", { text: f.summary }));
  if (f.causes && f.causes.length) box.appendChild(el("div", {}, el("strong", { text: "Probable causes" }), el("ul", {}, f.causes.map((c) => {
    const bar = el("span", { class: "score" }, el("span"));
    bar.firstChild.style.width = Math.round((c.score ?? 0.5) * 100) + "%";
    return el("li", {}, bar, " ", c.title, c.evidence ? el("span", { class: "muted", text: " — " + c.evidence }) : null);
  }))));
  if (f.actions && f.actions.length) box.appendChild(el("div", {}, el("strong", { text: "Actions" }), el("ul", {}, f.actions.map((a) =>
    el("li", {}, a.title, a.why ? el("span", { class: "muted", text: " — " + a.why }) : null,
      a.overrides && a.overrides.length ? el("pre", { class: "block", text: a.overrides.join("\n") }) : null)))));
  return box;
}

export async function renderDiagnosis(body, detail) {
  const run = detail.run;
  const data = await api(runPath(run.id) + "/diagnosis");
  const diag = data.diagnosis || {};
  const findings = (diag.findings || []).slice().sort((a, b) =>
    ["critical", "warning", "info"].indexOf(a.severity) - ["critical", "warning", "info"].indexOf(b.severity) || (a.step ?? 0) - (b.step ?? 0));
  const left = el("div", { id: "diagnosis" });
  const right = el("div");
  body.appendChild(el("div", { class: "two-col" }, left, right));
  const rc = diag.root_cause;
  const rcCard = el("div", { class: "card", id: "root-cause" }, el("h3", { text: "Root cause" }));
  const rcBody = el("div", { class: "card-body" });
  rcCard.appendChild(rcBody);
  if (rc) {
    rcBody.appendChild(el("h4", { text: describe(rc) }));
    if (rc.summary && rc.title) rcBody.appendChild(el("p", { text: rc.summary }));
    const chain = rc.chain || rc.steps || rc.path || [];
    if (chain.length) rcBody.appendChild(el("ol", { class: "chain" }, chain.map((c) => el("li", {}, describe(c),
      c && typeof c === "object" && (c.step !== undefined || c.detector) ? el("span", { class: "muted", text: `  ${c.detector || ""} ${c.step !== undefined && c.step !== null ? "@ step " + c.step : ""}` }) : null))));
    if (rc.evidence) rcBody.appendChild(el("p", { class: "muted", text: typeof rc.evidence === "string" ? rc.evidence : JSON.stringify(rc.evidence) }));
  } else {
    rcBody.appendChild(el("p", { class: "muted", text: findings.length ? "No single root cause identified; see the findings." : "No findings: nothing to diagnose." }));
  }
  left.appendChild(rcCard);
  if (data.source === "stored") left.appendChild(el("p", { class: "muted", text: "Showing stored findings (the health engine's diagnosis is not available" + (data.engine_error ? ": " + data.engine_error : "") + ")." }));
  left.appendChild(el("div", { class: "section-title", text: `Findings (${findings.length})` }));
  findings.forEach((f) => left.appendChild(findingCard(f)));
  const fix = el("div", { class: "card" }, el("h3", { text: "Overrides to apply" }));
  const fixBody = el("div", { class: "card-body" });
  fix.appendChild(fixBody);
  if (data.overrides.length) fixBody.appendChild(copyBlock("rlcockpit trainer", data.overrides, "copy-overrides"));
  if (data.verl_overrides.length) fixBody.appendChild(copyBlock("verl", data.verl_overrides, "copy-verl"));
  if (!data.overrides.length && !data.verl_overrides.length) fixBody.appendChild(el("p", { class: "muted", text: "No config change suggested." }));
  right.appendChild(fix);
  if (data.html_report) right.appendChild(el("p", {}, el("a", { href: runPath(run.id) + "/report.html", target: "_blank", rel: "noopener", text: "Open the full HTML report ↗" })));
  return () => {};
}

// ---- compare ----------------------------------------------------------------------------------

const DEFAULT_OVERLAYS = ["critic/score/mean", "actor/kl_loss", "actor/entropy", "response_length/mean", "actor/pg_loss", "actor/grad_norm"];

export async function renderCompare(root, params) {
  const ids = (params.get("runs") || "").split(",").filter(Boolean);
  setCrumbs([["Runs", "#/"], ["Compare", null]]);
  if (ids.length < 1) { root.appendChild(el("div", { class: "empty", text: "Select runs to compare on the runs page." })); return () => {}; }
  const meta = await api("/api/compare", { runs: ids.join(",") });
  const colors = new Map(meta.runs.map((r, i) => [r.id, PALETTE[i % PALETTE.length]]));
  root.appendChild(el("div", { class: "legend", id: "compare-legend" }, meta.runs.map((r) => {
    const sw = el("span", { class: "sw" }); sw.style.background = colors.get(r.id);
    return el("a", { href: "#/run/" + encodeURIComponent(r.id) }, sw, r.name);
  })));
  let overlay = DEFAULT_OVERLAYS.filter((k) => meta.keys.includes(k));
  if (!overlay.length) overlay = meta.keys.slice(0, 4);
  const picker = el("select", { id: "metric-picker" }, el("option", { value: "", text: "Add a metric…" }), meta.keys.map((k) => el("option", { value: k, text: k })));
  const grid = el("div", { class: "charts", id: "compare-charts" });
  const pathBox = el("div", { class: "chart-card", id: "path-plot" });
  const diffWrap = el("div");
  const onlyDiff = el("input", { type: "checkbox", id: "only-diff", checked: true });
  root.append(el("div", { class: "toolbar" }, picker, el("span", { class: "grow" })),
    el("div", { class: "two-col" }, el("div", {}, el("div", { class: "section-title", text: "Metrics" }), grid),
      el("div", {}, el("div", { class: "section-title", text: "Reward vs KL (○ start, ● end)" }), pathBox,
        el("div", { class: "toolbar" }, el("div", { class: "section-title", text: "Config diff" }), el("label", {}, onlyDiff, "only differing keys")), diffWrap)));
  async function addPanels(keys) {
    const data = await api("/api/compare", { runs: ids.join(","), keys: keys.join(","), max_points: 800, format: "b64" });
    for (const key of keys) {
      const name = el("span", { class: "name metric-name", text: key });
      attachTip(name, () => metricTip(key));
      const card = el("div", { class: "chart-card", dataset: { key } }, el("div", { class: "chart-title" }, name));
      grid.appendChild(card);
      const chart = new LineChart(card, {});
      chart.setSeries(data.runs.filter((r) => r.series[key]).map((r) => ({ name: r.name, color: colors.get(r.id), ...decodeSeries(r.series[key]) })));
    }
  }
  picker.addEventListener("change", () => { if (picker.value) { addPanels([picker.value]); picker.value = ""; } });
  await addPanels(overlay);
  const withPath = meta.runs.filter((r) => r.path);
  const pc = new PathChart(pathBox, { x: withPath[0] ? withPath[0].path.x_key : "KL", y: withPath[0] ? withPath[0].path.y_key : "reward" });
  pc.setPaths(withPath.map((r) => ({ name: r.name, color: colors.get(r.id), ...r.path })));
  const drawDiff = () => {
    const rows = meta.config_diff.filter((r) => !onlyDiff.checked || r.differs);
    clear(diffWrap).appendChild(el("div", { class: "card" }, el("table", { class: "grid diff", id: "config-diff" },
      el("thead", {}, el("tr", {}, el("th", { text: "key" }), meta.runs.map((r) => el("th", { text: r.name })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, el("td", { class: "mono", text: row.key }),
        row.values.map((v) => el("td", { class: "mono" + (row.differs ? " differs" : ""), text: v === null ? "–" : typeof v === "string" ? v : JSON.stringify(v) }))))),
      rows.length ? null : el("tbody", {}, el("tr", {}, el("td", { class: "muted", text: "Configs are identical." }))))));
  };
  onlyDiff.addEventListener("change", drawDiff);
  drawDiff();
  return () => {};
}
