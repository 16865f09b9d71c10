// The runs table: filters (project, text, status, group, tag, and expressions on config and summary such as
// `actor_rollout_ref.actor.optim.lr < 1e-5 and status == "finished"`), config/summary columns chosen by
// the user, sort by any column, select runs to compare. Everything is kept in the URL; live by SSE.

import { alignNumHeads, api, clear, debounce, el, fmtAgo, fmtNum, fmtTime, fmtValue, setCrumbs, severityBadges, statusPill } from "./core.js";
import { t } from "./i18n.js";
import { openRunsStream } from "./live.js";
import { settings } from "./state.js";

const METRICS = ["reward", "kl", "entropy", "resp_len"];
const LIST = (s) => (s ? String(s).split(",").filter(Boolean) : []);

function columnPicker(s, project, onChange) {
  const panel = el("div", { class: "picker", id: "column-picker", hidden: true });
  const btn = el("button", { type: "button", class: "btn", id: "columns-btn", text: t("runs.columns") });
  const search = el("input", { type: "search", id: "column-search", placeholder: t("runs.columns.search") });
  const list = el("div", { class: "picker-list" });
  panel.append(search, list);
  let fields = null;
  const draw = () => {
    const chosen = new Set(LIST(s.values.cols));
    const q = search.value.trim().toLowerCase();
    clear(list);
    for (const [kind, names] of [["config", fields.config], ["summary", fields.summary]]) {
      const shown = names.filter((n) => !q || n.toLowerCase().includes(q)).slice(0, 300);
      if (!shown.length) continue;
      list.appendChild(el("div", { class: "picker-head", text: t("runs.columns." + kind) }));
      for (const n of shown) {
        const path = kind === "summary" ? "summary." + n : n;
        const box = el("input", { type: "checkbox", checked: chosen.has(path), dataset: { path } });
        box.addEventListener("change", () => {
          const cur = LIST(s.values.cols).filter((c) => c !== path);
          if (box.checked) cur.push(path);
          s.set("cols", cur.join(","));
          onChange();
        });
        list.appendChild(el("label", { class: "picker-item" }, box, el("span", { class: "mono", text: n })));
      }
    }
  };
  btn.addEventListener("click", async () => {
    panel.hidden = !panel.hidden;
    if (!panel.hidden && !fields) { fields = await api("/api/runs/fields", { project: project() }); draw(); }
  });
  search.addEventListener("input", debounce(() => fields && draw(), 100));
  return { btn, panel };
}

export async function renderRuns(root, params) {
  setCrumbs([[t("nav.runs"), null]]);
  const s = settings("runs", { project: "", q: "", status: "", group: "", tag: "", filter: "", cols: "", sort: "created_at", desc: true });
  const v = s.values;
  const state = { selected: new Set(), runs: [], unknown: [] };
  const projects = (await api("/api/projects")).projects;
  const projectSel = el("select", { id: "project-filter" }, el("option", { value: "", text: t("runs.allProjects", { n: projects.reduce((a, p) => a + p.runs, 0) }) }),
    projects.map((p) => el("option", { value: p.name, text: `${p.name} (${p.runs})` })));
  projectSel.value = v.project;
  projectSel.addEventListener("change", () => { s.set("project", projectSel.value); load(); });
  const search = el("input", { type: "search", id: "run-search", placeholder: t("runs.search"), value: v.q });
  search.addEventListener("input", debounce(() => { s.set("q", search.value); draw(); }, 120));
  const statusSel = el("select", { id: "status-filter" }, ["", "running", "finished", "failed", "crashed"].map((x) => el("option", { value: x, text: x ? t("status." + x) : t("runs.anyStatus") })));
  statusSel.value = v.status;
  statusSel.addEventListener("change", () => { s.set("status", statusSel.value); draw(); });
  const groupSel = el("select", { id: "group-filter" });
  groupSel.addEventListener("change", () => { s.set("group", groupSel.value); draw(); });
  const tagSel = el("select", { id: "tag-filter" });
  tagSel.addEventListener("change", () => { s.set("tag", tagSel.value); draw(); });
  const expr = el("input", { type: "search", id: "run-filter", class: "expr", placeholder: t("runs.filter"), value: v.filter });
  expr.addEventListener("keydown", (e) => { if (e.key === "Enter") { s.set("filter", expr.value.trim()); load(); } });
  const exprErr = el("div", { class: "error", id: "filter-error", hidden: true });
  const exprWarn = el("div", { class: "muted", id: "filter-warning" });
  const compareBtn = el("button", { type: "button", class: "btn primary", id: "compare-btn", disabled: true,
    on: { click: () => { location.hash = "#/compare?runs=" + [...state.selected].map(encodeURIComponent).join(","); } } });
  const countEl = el("span", { class: "muted", id: "run-count" });
  const picker = columnPicker(s, () => v.project, () => load());
  root.append(el("div", { class: "toolbar" }, projectSel, search, statusSel, groupSel, tagSel, el("span", { class: "grow" }), countEl, compareBtn),
    el("div", { class: "toolbar" }, expr, picker.btn), picker.panel, exprErr, exprWarn);
  const table = el("table", { class: "grid", id: "runs-table" });
  root.appendChild(el("div", { class: "card" }, table));

  const cols = () => [
    ["", null], [t("runs.col.name"), "name"], [t("runs.col.status"), "status"], [t("runs.col.group"), "group"], [t("runs.col.tags"), null],
    [t("runs.col.step"), "last_step"], ...METRICS.map((k) => [t("metric." + k), "m:" + k]),
    ...LIST(v.cols).map((c) => [c, "c:" + c]),
    [t("runs.col.findings"), "findings"], [t("runs.col.created"), "created_at"], [t("runs.col.updated"), "updated_at"],
  ];
  const sortVal = (r, key) => key.startsWith("m:") ? r.metrics[key.slice(2)] : key.startsWith("c:") ? (r.cols || {})[key.slice(2)]
    : key === "findings" ? r.findings.critical * 1e6 + r.findings.warning * 1e3 + r.findings.info : r[key];

  function draw() {
    const q = v.q.trim().toLowerCase();
    let rows = state.runs.filter((r) => (!v.status || r.status === v.status) && (!v.group || r.group === v.group)
      && (!v.tag || (r.tags || []).includes(v.tag))
      && (!q || [r.id, r.name, r.group || "", ...(r.tags || [])].join(" ").toLowerCase().includes(q)));
    rows = rows.slice().sort((a, b) => {
      const va = sortVal(a, v.sort), vb = sortVal(b, v.sort);
      const na = va === null || va === undefined, nb = vb === null || vb === undefined;
      if (na || nb) return na && nb ? 0 : na ? 1 : -1; // missing last in both directions
      const cmp = va === vb ? 0 : va < vb ? -1 : 1;
      return v.desc ? -cmp : cmp;
    });
    const head = el("tr", {}, cols().map(([label, key]) => el("th", { dataset: key ? { sort: key } : {},
      text: label + (key && v.sort === key ? (v.desc ? " ▾" : " ▴") : ""),
      on: key ? { click: () => { s.set("desc", v.sort === key ? !v.desc : true); s.set("sort", key); draw(); } } : {} })));
    const body = el("tbody");
    const now = Date.now() / 1000;
    for (const r of rows) {
      const box = el("input", { type: "checkbox", class: "run-select", checked: state.selected.has(r.id) });
      const tr = el("tr", { class: state.selected.has(r.id) ? "selected" : "", dataset: { run: r.id } },
        el("td", {}, box),
        el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id), class: "run-link", text: r.name }),
          el("div", { class: "muted mono", text: r.id.slice(0, 12) + (v.project ? "" : "  · " + r.project) })),
        el("td", {}, statusPill(r.status), r.data_lost ? el("span", { class: "pill failed lost-flag", title: t("runs.dataLost", { n: r.data_lost }), text: "!" }) : null),
        el("td", { text: r.group || "" }),
        el("td", {}, (r.tags || []).map((x) => el("span", { class: "tag", text: x }))),
        el("td", { class: "num", text: r.last_step ?? "–" }),
        METRICS.map((k) => el("td", { class: "num", text: fmtNum(r.metrics[k]) })),
        LIST(v.cols).map((c) => el("td", { class: "num cfg", dataset: { col: c }, text: fmtValue((r.cols || {})[c]) })),
        el("td", {}, severityBadges(r.findings)), el("td", { class: "muted", text: fmtTime(r.created_at) }),
        el("td", { class: "muted", text: fmtAgo(r.updated_at, now) }));
      box.addEventListener("change", () => { if (box.checked) state.selected.add(r.id); else state.selected.delete(r.id); tr.classList.toggle("selected", box.checked); updateCompare(); });
      body.appendChild(tr);
    }
    clear(table).append(el("thead", {}, head), body);
    alignNumHeads(table);
    if (!rows.length) body.appendChild(el("tr", {}, el("td", { colspan: cols().length, class: "empty",
      text: state.runs.length ? t("runs.noMatch") : t("runs.empty") })));
    countEl.textContent = t("runs.count", { n: rows.length, total: state.total ?? state.runs.length });
    updateCompare();
  }
  function updateCompare() {
    compareBtn.textContent = t("runs.compare", { n: state.selected.size });
    compareBtn.disabled = state.selected.size < 2;
  }
  function options(sel, values, anyLabel, keep) {
    clear(sel).append(el("option", { value: "", text: anyLabel }), ...values.map((x) => el("option", { value: x, text: x })));
    sel.value = values.includes(keep) ? keep : "";
  }
  async function load() {
    let data;
    try {
      data = await api("/api/runs", { project: v.project, filter: v.filter, columns: v.cols });
      exprErr.hidden = true;
    } catch (e) { exprErr.hidden = false; exprErr.textContent = e.message; return; }
    state.runs = data.runs; state.total = data.total;
    exprWarn.textContent = data.unknown_names.length ? t("runs.unknownNames", { names: data.unknown_names.join(", ") }) : "";
    options(groupSel, [...new Set(state.runs.map((r) => r.group).filter(Boolean))].sort(), t("runs.anyGroup"), v.group);
    options(tagSel, [...new Set(state.runs.flatMap((r) => r.tags || []))].sort(), t("runs.anyTag"), v.tag);
    draw();
    table.dataset.loaded = String(Date.now());
  }
  await load();
  const close = openRunsStream(v.project, () => load().catch(() => {}));
  return () => close();
}
