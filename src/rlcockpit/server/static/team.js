// Team-server additions to the dashboard (loaded by the team server's index.html only):
//   * KPI target lines on every chart of a target's metric (core.js extensions.targets);
//   * #/team — per project: KPI targets (admins add/remove), the leaderboard, saved views, ratings export;
//   * "Save view" in the top bar: the current page (route, filters, panels, smoothing, x axis — all in the
//     URL hash) saved under a name, shareable as /#/view/<id> (#/view/<id> opens it);
//   * sample ratings (good / bad / reward-hacked + note) on the samples table.
// Same safety rule as the dashboard: text only through el() (textContent), never innerHTML. Writes carry
// the CSRF header (the rlcockpit_csrf cookie).

import { api, clear, el, errorBox, extensions, fmtNum, fmtTime, setCrumbs } from "/static/js/core.js";
import { hashParts } from "/static/js/state.js";

// A first visit's ?token=... has become an HttpOnly cookie (the server set it with this page): take it out
// of the address bar and the history entry, so it is not shown, bookmarked, shared or shoulder-surfed.
(function stripLoginToken() {
  const url = new URL(window.location.href);
  if (!url.searchParams.has("token")) return;
  url.searchParams.delete("token");
  window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
})();

let targets = [];
let me = { name: "", is_admin: false, roles: {} };

function csrf() {
  const m = document.cookie.match(/(?:^|;\s*)rlcockpit_csrf=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

async function send(method, path, body) {
  const resp = await fetch(path, { method, credentials: "same-origin", headers: { "content-type": "application/json",
    "x-csrf-token": csrf() }, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) throw new Error((data && data.error) || `${resp.status} ${resp.statusText}`);
  return data;
}

const canAdmin = (project) => me.is_admin || me.roles[project] === "admin";
const canWrite = (project) => me.is_admin || ["member", "admin"].includes(me.roles[project]);

// ---- KPI target lines ----------------------------------------------------------------------------
extensions.targets = (key) => targets.filter((t) => t.key === key).map((t) => ({
  value: t.value, label: `${t.label || "target"} ${t.op} ${fmtNum(t.value)}` + (new Set(targets.map((x) => x.project)).size > 1 ? ` (${t.project})` : ""),
}));

async function loadTargets() {
  try { targets = (await api("/api/team/targets")).targets || []; } catch (e) { targets = []; }
}

// ---- #/team page -----------------------------------------------------------------------------------
function table(headers, rows) {
  return el("table", { class: "grid" }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { text: c ?? "–" })))))));
}

async function renderTeam(root, parts, params) {
  setCrumbs([["runs", "#/"], ["team", null]]);
  const projects = (await api("/api/projects")).projects.map((p) => p.name);
  const project = params.get("project") || projects[0] || "default";
  const pick = el("select", { id: "team-project" }, projects.map((p) => el("option", { value: p, text: p })));
  pick.value = project;
  pick.addEventListener("change", () => { location.hash = "#/team?project=" + encodeURIComponent(pick.value); });
  const box = el("div", { id: "team-page" });
  root.append(el("div", { class: "toolbar" }, el("label", {}, "project ", pick), el("span", { class: "grow" }),
    el("a", { class: "btn small", href: `/api/team/projects/${encodeURIComponent(project)}/ratings/export?format=csv`, text: "ratings CSV" }),
    el("a", { class: "btn small", href: `/api/team/projects/${encodeURIComponent(project)}/ratings/export?format=jsonl`, text: "ratings JSONL" })), box);
  await drawTeam(box, project);
}

async function drawTeam(box, project) {
  clear(box);
  const [board, views] = await Promise.all([api(`/api/team/projects/${encodeURIComponent(project)}/leaderboard`),
    api(`/api/team/projects/${encodeURIComponent(project)}/views`)]);
  const targetsCard = el("div", { class: "card", id: "kpi-targets" }, el("h3", { text: "KPI targets" }));
  const body = el("div", { class: "card-body" });
  targetsCard.appendChild(body);
  for (const entry of board.leaderboard) {
    const t = entry.target;
    const del = canAdmin(project) ? el("button", { type: "button", class: "btn tiny", text: "remove", on: { click: async () => {
      await send("DELETE", `/api/team/targets/${t.id}`); await loadTargets(); drawTeam(box, project); } } }) : null;
    body.appendChild(el("h4", { class: "kpi-title" }, `${t.label ? t.label + ": " : ""}${t.key} ${t.op} ${fmtNum(t.value)} `, del));
    body.appendChild(entry.runs.length ? table(["#", "run", "best", "best at step", "reached at step", "last", "who", "status"],
      entry.runs.map((r, i) => [String(i + 1), el("a", { href: "#/run/" + encodeURIComponent(r.run_id), text: r.name }), fmtNum(r.best),
        String(r.best_step), r.reached ? String(r.reached_step) : "not yet", fmtNum(r.last), r.user || "–", r.status]))
      : el("div", { class: "muted", text: "no run has logged this metric yet" }));
  }
  if (!board.leaderboard.length) body.appendChild(el("div", { class: "muted", text: "no KPI targets in this project" }));
  if (canAdmin(project)) {
    const input = el("input", { type: "text", id: "kpi-input", placeholder: "val-core/aime/acc/mean@1 >= 0.70", size: 40 });
    const label = el("input", { type: "text", id: "kpi-label", placeholder: "label (optional)", size: 16 });
    const err = el("div", { class: "error", hidden: true });
    const add = el("button", { type: "button", class: "btn small primary", id: "kpi-add", text: "add target", on: { click: async () => {
      try { await send("POST", `/api/team/projects/${encodeURIComponent(project)}/targets`, { target: input.value, label: label.value || null });
        await loadTargets(); drawTeam(box, project); } catch (e) { err.hidden = false; err.textContent = e.message; } } } });
    body.appendChild(el("div", { class: "toolbar" }, input, label, add));
    body.appendChild(err);
  }
  const viewsCard = el("div", { class: "card", id: "saved-views" }, el("h3", { text: "saved views" }),
    el("div", { class: "card-body" }, views.views.length ? table(["view", "by", "saved", "link"], views.views.map((v) => [
      el("a", { href: "#/view/" + encodeURIComponent(v.id), text: v.name }), v.owner, fmtTime(v.updated_at),
      el("code", { text: location.origin + v.url })])) : el("div", { class: "muted", text: "no saved views yet: use “Save view” on any page" })));
  box.append(targetsCard, viewsCard);
}

async function openView(root, parts) {
  const data = await api(`/api/team/views/${encodeURIComponent(parts[1] || "")}`);
  location.replace("#" + String(data.view.state.route || "/").replace(/^#/, ""));
}

extensions.routes.team = renderTeam;
extensions.routes.view = openView;

// ---- saving the current page as a view ----------------------------------------------------------------
async function currentProject() {
  const { parts, params } = hashParts();
  if (parts[0] === "run" && parts[1]) {
    try { return (await api("/api/runs/" + encodeURIComponent(parts[1]))).run.project; } catch (e) { /* fall through */ }
  }
  return params.get("project") || Object.keys(me.roles)[0] || (await api("/api/projects")).projects.map((p) => p.name)[0];
}

async function saveView() {
  const name = window.prompt("Name of this view (shared with the project):", document.title);
  if (!name) return;
  const project = await currentProject();
  const { params } = hashParts();
  const state = { route: location.hash || "#/", smoothing: params.get("smooth"), x: params.get("x"), filter: params.get("filter"),
    panels: params.get("keys") };
  try {
    const view = (await send("POST", `/api/team/projects/${encodeURIComponent(project)}/views`, { name, state })).view;
    const link = location.origin + view.url;
    const dlg = el("div", { class: "modal", id: "view-saved" }, el("div", { class: "modal-inner" },
      el("p", { text: `View “${view.name}” saved in ${project}. Share this link:` }), el("code", { id: "view-link", text: link }),
      el("div", {}, el("button", { type: "button", class: "btn small", text: "close", on: { click: () => dlg.remove() } }))));
    document.body.appendChild(dlg);
  } catch (e) { window.alert(e.message); }
}

// ---- sample ratings ------------------------------------------------------------------------------------------
const RATINGS = [["good", "👍", "good"], ["bad", "👎", "bad"], ["hacked", "⚠", "reward-hacked"]];
let ratingCache = { run: null, at: 0, map: new Map() };

async function ratingsFor(runId, loaded) {
  if (ratingCache.run !== runId || ratingCache.at !== loaded) {
    const rows = (await api(`/api/team/runs/${encodeURIComponent(runId)}/ratings`)).ratings;
    const map = new Map();
    for (const r of rows) { const k = `${r.step}/${r.idx}`; if (!map.has(k)) map.set(k, []); map.get(k).push(r); }
    ratingCache = { run: runId, at: loaded, map };
  }
  return ratingCache.map;
}

function ratingCell(runId, project, tr, existing) {
  const shown = el("span", { class: "rating-shown" }, existing.map((r) => el("span", { class: "rating " + r.rating, title: `${r.author}: ${r.note || ""}`,
    text: (RATINGS.find((x) => x[0] === r.rating) || [0, "?"])[1] + " " + r.author })));
  const td = el("td", { class: "rating-cell" }, shown);
  if (canWrite(project)) {
    for (const [value, icon, title] of RATINGS) {
      td.appendChild(el("button", { type: "button", class: "btn tiny rate-btn", dataset: { rating: value }, title, text: icon, on: { click: async () => {
        const note = value === "good" ? "" : (window.prompt(`Note for “${title}” (optional):`, "") || "");
        try {
          const out = (await send("POST", `/api/team/runs/${encodeURIComponent(runId)}/ratings`, { step: Number(tr.dataset.step),
            idx: Number(tr.dataset.idx), rating: value, note })).rated;
          shown.appendChild(el("span", { class: "rating " + out.rating, title: out.note, text: icon + " " + out.author }));
        } catch (e) { window.alert(e.message); }
      } } }));
    }
  }
  return td;
}

async function decorateSamples() {
  const tableEl = document.getElementById("samples-table");
  const { parts } = hashParts();
  if (!tableEl || parts[0] !== "run" || tableEl.dataset.rated) return;
  tableEl.dataset.rated = "1";
  const runId = parts[1];
  let project = "";
  try { project = (await api("/api/runs/" + encodeURIComponent(runId))).run.project; } catch (e) { return; }
  const loaded = (document.getElementById("samples-out") || {}).dataset?.loaded;
  const map = await ratingsFor(runId, loaded);
  const head = tableEl.querySelector("thead tr");
  if (head) head.appendChild(el("th", { text: "rating" }));
  for (const tr of tableEl.querySelectorAll("tbody tr[data-step]")) {
    tr.appendChild(ratingCell(runId, project, tr, map.get(`${tr.dataset.step}/${tr.dataset.idx}`) || []));
  }
}

// ---- start -------------------------------------------------------------------------------------------------
async function start() {
  try { me = await api("/api/v1/whoami"); } catch (e) { return; }
  await loadTargets();
  const right = document.querySelector(".topbar-right");
  if (right) {
    right.prepend(el("a", { class: "btn ghost", id: "team-link", href: "#/team", text: "Team" }),
      el("button", { type: "button", class: "btn ghost", id: "save-view", text: "Save view", on: { click: saveView } }),
      el("span", { class: "muted", id: "team-user", text: me.name }));
  }
  new MutationObserver(() => { decorateSamples().catch(() => {}); }).observe(document.getElementById("app"), { childList: true, subtree: true });
  const { parts } = hashParts();
  if (targets.length || extensions.routes[parts[0]]) window.dispatchEvent(new HashChangeEvent("hashchange"));
}

start().catch((e) => { const app = document.getElementById("app"); if (app) app.prepend(errorBox(e)); });
