// The Samples tab: a table (sort by any column, filter expressions, full-text search, pages), the GRPO
// group view, one prompt across steps (the trainer's validation probe set), and two steps side by side.
// Model outputs are untrusted: they only ever become text nodes (see core.js).

import { alignNumHeads, api, clear, debounce, el, fmtNum, fmtValue, PALETTE, runPath } from "./core.js";
import { t } from "./i18n.js";
import { Chart } from "./chart.js";
import { settings } from "./state.js";
import { imageRefs, thumbs } from "./media.js";

const VIEWS = ["table", "groups", "prompt", "compare"];

export function highlighted(text, repeats, query) {
  const frag = document.createDocumentFragment();
  if (text === null || text === undefined) { frag.appendChild(el("span", { class: "muted", text: "–" })); return frag; }
  text = String(text);
  const hits = [];
  if (query) {
    const low = text.toLowerCase(), q = query.toLowerCase();
    for (let i = low.indexOf(q); i >= 0 && hits.length < 200; i = low.indexOf(q, i + q.length)) hits.push([i, i + q.length]);
  }
  const cuts = new Set([0, text.length]);
  for (const [a, b] of [...(repeats || []), ...hits]) { cuts.add(Math.min(a, text.length)); cuts.add(Math.min(b, text.length)); }
  const points = [...cuts].sort((a, b) => a - b);
  const inside = (spans, a) => spans.some(([x, y]) => a >= x && a < y);
  for (let i = 0; i + 1 < points.length; i++) {
    const a = points[i], b = points[i + 1];
    if (a === b) continue;
    let node = document.createTextNode(text.slice(a, b));
    if (inside(hits, a)) node = el("mark", { class: "hit" }, node);
    if (inside(repeats || [], a)) node = el("span", { class: "rep", title: t("samples.repeated") }, node);
    frag.appendChild(node);
  }
  return frag;
}

function textCell(text, repeats, query) {
  const td = el("td", { class: "text" }, el("div", { class: "clamp" }, highlighted(text, repeats, query)));
  if (text && String(text).length > 400) {
    const more = el("div", { class: "more", text: t("samples.expand") });
    more.addEventListener("click", () => { td.classList.toggle("open"); more.textContent = t(td.classList.contains("open") ? "samples.collapse" : "samples.expand"); });
    td.appendChild(more);
  }
  return td;
}

// A multi-turn (agent-loop) trajectory, turn by turn: each message under its role, each tool call with its
// arguments and its result (rows of verl rollout dumps carry them as `turns`, see integrations/verl_turns.py).
function turnsCell(turns, query) {
  const box = el("div", { class: "turns" }, turns.map((turn) => el("div", { class: "turn turn-" + turn.role, dataset: { role: turn.role } },
    el("span", { class: "pill", text: turn.role }), " ", highlighted(turn.content || "", [], query),
    (turn.tool_calls || []).map((c) => el("div", { class: "tool-call mono", dataset: { tool: c.name || "" } },
      "→ " + (c.name || "?") + "(" + fmtValue(c.arguments) + ")" + (c.result !== undefined ? " ⇒ " + c.result : ""))))));
  return el("td", { class: "text" }, box);
}

function stepSelect(id, steps, value) {
  const sel = el("select", { id }, steps.map((st) => el("option", { value: st, text: t("chart.step", { n: st }) })));
  if (value !== undefined && value !== null) sel.value = String(value);
  return sel;
}

async function tableView(out, run, steps, s) {
  const v = s.values;
  const step = stepSelect("sample-step", steps, v.step !== "" ? v.step : steps[steps.length - 1]);
  const all = el("input", { type: "checkbox", id: "search-all", checked: v.step === "all" });
  const search = el("input", { type: "search", id: "sample-search", placeholder: t("samples.search"), value: v.q });
  const filter = el("input", { type: "search", id: "sample-filter", class: "expr", placeholder: t("samples.filter"), value: v.filter });
  const kind = el("select", { id: "sample-kind" }, el("option", { value: "", text: t("samples.kind.all") }), el("option", { value: "probe", text: t("samples.kind.probe") }));
  kind.value = v.kind;
  const size = el("select", { id: "page-size" }, [50, 100, 200, 500].map((n) => el("option", { value: n, text: t("samples.perPage", { n }) })));
  size.value = String(v.size);
  const prev = el("button", { type: "button", class: "btn small", id: "page-prev", text: "◀" });
  const next = el("button", { type: "button", class: "btn small", id: "page-next", text: "▶" });
  const info = el("span", { class: "muted", id: "page-info" });
  const err = el("div", { class: "error", id: "sample-filter-error", hidden: true });
  const tableBox = el("div", { id: "samples-out" });
  out.append(el("div", { class: "toolbar" }, el("label", {}, t("samples.step"), step), el("label", {}, all, t("samples.allSteps")), search, filter, kind,
    el("span", { class: "grow" }), prev, info, next, size), err, tableBox);
  const reload = (resetPage = true) => { if (resetPage) s.set("page", 0); load(); };
  step.addEventListener("change", () => { s.set("step", step.value); reload(); });
  all.addEventListener("change", () => { s.set("step", all.checked ? "all" : step.value); reload(); });
  search.addEventListener("input", debounce(() => { s.set("q", search.value.trim()); reload(); }, 250));
  filter.addEventListener("keydown", (e) => { if (e.key === "Enter") { s.set("filter", filter.value.trim()); reload(); } });
  kind.addEventListener("change", () => { s.set("kind", kind.value); reload(); });
  size.addEventListener("change", () => { s.set("size", Number(size.value)); reload(); });
  prev.addEventListener("click", () => { s.set("page", Math.max(0, v.page - 1)); load(); });
  next.addEventListener("click", () => { s.set("page", v.page + 1); load(); });

  async function load() {
    let data;
    try {
      data = await api(runPath(run.id) + "/samples", { step: v.step === "all" ? "all" : v.step || undefined, q: v.q, filter: v.filter, kind: v.kind,
        sort: v.sort, desc: v.desc ? "true" : undefined, limit: v.size, offset: v.page * v.size });
      err.hidden = true;
    } catch (e) { err.hidden = false; err.textContent = e.message; return; }
    const cols = data.columns.filter((c) => c !== "idx");
    const head = el("tr", {}, cols.map((c) => {
      const th = el("th", { dataset: { col: c }, text: c + (v.sort === c ? (v.desc ? " ▾" : " ▴") : ""), title: t("samples.sortBy") });
      th.addEventListener("click", () => { s.set("desc", v.sort === c ? !v.desc : c === "reward"); s.set("sort", c); reload(); });
      return th;
    }), el("th", { text: t("samples.repeat") }));
    const tb = el("tbody");
    for (const row of data.rows) {
      tb.appendChild(el("tr", { dataset: { step: row.step, idx: row.idx } }, cols.map((c) => {
        if (c === "prompt") return textCell(row.prompt, [], v.q);
        if (c === "response") return textCell(row.response, row._repeats, v.q);
        if (c === "turns" && Array.isArray(row.turns)) return turnsCell(row.turns, v.q);
        const val = row[c];
        const images = imageRefs(val);
        if (images.length) return el("td", { class: "media" }, thumbs(run.id, images));
        return typeof val === "number" ? el("td", { class: "num", text: fmtNum(val) }) : textCell(fmtValue(val), [], v.q);
      }), el("td", { class: "num", text: row._repeat_ratio ? Math.round(row._repeat_ratio * 100) + "%" : "" })));
    }
    const first = data.rows.length ? data.offset + 1 : 0, last = data.offset + data.rows.length;
    info.textContent = data.total !== null && data.total !== undefined ? t("samples.rowsOf", { a: first, b: last, n: data.total })
      : t("samples.rows", { a: first, b: last }) + (data.more ? "+" : "");
    prev.disabled = data.offset === 0;
    next.disabled = !data.more;
    clear(tableBox).appendChild(alignNumHeads(el("table", { class: "grid samples", id: "samples-table" }, el("thead", {}, head), tb)));
    if (!data.rows.length) tableBox.appendChild(el("div", { class: "empty", text: t("samples.noMatch") }));
    tableBox.dataset.loaded = String(Date.now());
  }
  await load();
  return { reload: () => load() };
}

function groupCard(g, components, query, runId) {
  const rows = g.responses.map((r) => el("tr", {}, el("td", { class: "num", text: r.idx }), el("td", { class: "num reward", text: fmtNum(r.reward) }),
    el("td", { class: "num adv" + (r.advantage > 0 ? " pos" : r.advantage < 0 ? " neg" : ""), text: fmtNum(r.advantage) }),
    components.map((c) => el("td", { class: "num", text: fmtNum(r.components[c]) })), textCell(r.response, r._repeats, query)));
  return el("div", { class: "card grpo-group" + (g.zero_variance ? " zero-var" : ""), dataset: { group: g.id } },
    el("div", { class: "card-body" },
      el("div", { class: "group-head" }, (g.images || []).length ? thumbs(runId, g.images) : null, el("span", { class: "mono prompt", text: g.prompt }),
        el("span", { class: "muted", text: t("groups.stats", { n: g.n, mean: fmtNum(g.mean_reward), std: fmtNum(g.std_reward) }) }),
        g.zero_variance ? el("span", { class: "pill crashed", text: t("groups.zeroVar") }) : null),
      alignNumHeads(el("table", { class: "grid samples" }, el("thead", {}, el("tr", {}, el("th", { text: "#" }), el("th", { text: t("groups.reward") }),
        el("th", { text: t("groups.advantage") }), components.map((c) => el("th", { text: c })), el("th", { text: t("groups.response") }))), el("tbody", {}, rows)))));
}

async function groupsView(out, run, steps, s) {
  const v = s.values;
  const step = stepSelect("group-step", steps, v.gstep !== "" ? v.gstep : steps[steps.length - 1]);
  const order = el("select", { id: "group-order" }, ["zero", "low", "high"].map((k) => el("option", { value: k, text: t("groups.order." + k) })));
  order.value = v.gorder;
  const summary = el("div", { class: "muted", id: "group-summary" });
  const list = el("div", { id: "groups-out" });
  out.append(el("div", { class: "toolbar" }, el("label", {}, t("samples.step"), step), el("label", {}, t("groups.order"), order), el("span", { class: "grow" }), summary), list);
  step.addEventListener("change", () => { s.set("gstep", step.value); load(); });
  order.addEventListener("change", () => { s.set("gorder", order.value); load(); });
  async function load() {
    const data = await api(runPath(run.id) + "/samples/groups", { step: step.value });
    const groups = data.groups.slice();
    if (v.gorder === "zero") groups.sort((a, b) => b.zero_variance - a.zero_variance);
    else groups.sort((a, b) => (v.gorder === "low" ? 1 : -1) * ((a.mean_reward ?? 0) - (b.mean_reward ?? 0)));
    const sizes = data.group_sizes || [0, 0];
    summary.textContent = t(groups.length === 1 ? "groups.summary.one" : "groups.summary", { g: groups.length, z: data.zero_variance, p: Math.round((data.zero_variance_fraction || 0) * 100),
      r: data.responses ?? 0, n: sizes[0] === sizes[1] ? String(sizes[0]) : `${sizes[0]}–${sizes[1]}`,
      by: data.group_by === "prompt" ? t("groups.byPrompt") : data.group_by, adv: data.advantage_source || t("groups.advComputed") });
    clear(list).append(...groups.map((g) => groupCard(g, data.components, "", run.id)));
    if (!groups.length) list.appendChild(el("div", { class: "empty", text: t("samples.noMatch") }));
  }
  await load();
  return { reload: load };
}

async function promptView(out, run, s) {
  const v = s.values;
  const probesOnly = el("input", { type: "checkbox", id: "probes-only", checked: v.probes });
  const pick = el("select", { id: "prompt-select" });
  const chartBox = el("div", { class: "chart-box", id: "prompt-reward-chart" });
  const list = el("div", { id: "prompt-history" });
  out.append(el("div", { class: "toolbar" }, el("label", {}, probesOnly, t("prompt.probesOnly")), pick), el("div", { class: "chart-card" }, el("div", { class: "chart-title", text: t("prompt.rewardOverSteps") }), chartBox), list);
  const chart = new Chart(chartBox, { height: 150 });
  async function loadIndex() {
    const data = await api(runPath(run.id) + "/samples/prompts", { probes: probesOnly.checked ? "true" : undefined });
    clear(pick).append(el("option", { value: "", text: t("prompt.pick", { n: data.total }) }),
      ...data.prompts.map((p) => el("option", { value: p.prompt, text: `${p.probe ? "[" + t("prompt.probe") + "] " : ""}${p.prompt.slice(0, 90)} (${t("prompt.steps", { n: p.n_steps })})` })));
    if (v.prompt && data.prompts.some((p) => p.prompt === v.prompt)) pick.value = v.prompt;
    else if (data.prompts.length && data.prompts[0].n_steps > 1) pick.value = data.prompts[0].prompt;
    await loadHistory();
  }
  async function loadHistory() {
    clear(list);
    if (!pick.value) return;
    const data = await api(runPath(run.id) + "/samples/history", { prompt: pick.value });
    chart.setSeries([{ id: "reward", name: t("groups.reward"), color: PALETTE[2], steps: data.steps.map((x) => x.step), ts: data.steps.map((x) => x.step),
      values: data.steps.map((x) => x.mean_reward), nonfinite: [] }]);
    for (const st of data.steps) {
      list.appendChild(el("div", { class: "card history-step", dataset: { step: st.step } }, el("div", { class: "card-body" },
        el("div", { class: "group-head" }, el("strong", { text: t("chart.step", { n: st.step }) }), el("span", { class: "muted", text: t("prompt.meanReward", { v: fmtNum(st.mean_reward) }) })),
        st.rows.map((r) => el("div", { class: "hist-row" }, el("span", { class: "num muted", text: fmtNum(r.reward) }), el("span", { class: "mono" }, highlighted(r.response, r._repeats, "")))))));
    }
  }
  probesOnly.addEventListener("change", () => { s.set("probes", probesOnly.checked); loadIndex(); });
  pick.addEventListener("change", () => { s.set("prompt", pick.value); loadHistory(); });
  await loadIndex();
  return { reload: loadIndex, dispose: () => chart.destroy() };
}

async function compareView(out, run, steps) {
  const a = stepSelect("cmp-a", steps, steps[0]), b = stepSelect("cmp-b", steps, steps[steps.length - 1]);
  const btn = el("button", { type: "button", class: "btn", id: "cmp-btn", text: t("cmp.go") });
  const res = el("div", { id: "cmp-out" });
  out.append(el("div", { class: "toolbar" }, el("label", {}, t("cmp.samePrompt"), a, t("cmp.vs"), b), btn), res);
  btn.addEventListener("click", async () => {
    const data = await api(runPath(run.id) + "/samples/compare", { a: a.value, b: b.value, limit: 50 });
    clear(res).appendChild(el("div", { class: "muted", id: "cmp-summary", text: t("cmp.summary", { n: data.total, a: data.a, b: data.b }) }));
    for (const p of data.pairs) {
      const col = (rows, st) => el("div", { class: "col" }, rows.map((r) => el("div", {},
        el("div", { class: "r", text: t("cmp.rowHead", { s: st, r: fmtNum(r.reward) }) }), highlighted(r.response, r._repeats, ""))));
      res.append(el("div", { class: "card" }, el("div", { class: "card-body" }, el("div", { class: "mono", text: p.prompt }),
        el("div", { class: "cmp-pair" }, col(p.a, data.a), col(p.b, data.b)))));
    }
    if (!data.pairs.length) res.appendChild(el("div", { class: "empty", text: t("cmp.none") }));
  });
  return {};
}

export async function renderSamples(body, detail) {
  const run = detail.run;
  const s = settings("samples", { view: "table", step: "", q: "", filter: "", kind: "", sort: "", desc: false, page: 0, size: 100,
    gstep: "", gorder: "zero", probes: true, prompt: "" });
  const nav = el("div", { class: "subnav", id: "samples-views" });
  const out = el("div", { id: "samples-view" });
  const empty = el("div", { class: "empty", id: "samples-empty", text: t("samples.none") });
  body.append(nav, out);
  let current = {};
  const show = async (view) => {
    s.set("view", view);
    nav.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b.dataset.view === view));
    if (current.dispose) current.dispose();
    clear(out);
    if (!detail.sample_steps.length) { out.appendChild(empty); current = {}; return; }
    const steps = detail.sample_steps;
    current = await ({ table: () => tableView(out, run, steps, s), groups: () => groupsView(out, run, steps, s),
      prompt: () => promptView(out, run, s), compare: () => compareView(out, run, steps) })[view]();
  };
  for (const view of VIEWS) nav.appendChild(el("button", { type: "button", class: "btn", dataset: { view }, id: "view-" + view, text: t("samples.view." + view), on: { click: () => show(view) } }));
  await show(VIEWS.includes(s.values.view) ? s.values.view : "table");
  return {
    onSamples() { show(s.values.view); },
    dispose() { if (current.dispose) current.dispose(); },
  };
}
