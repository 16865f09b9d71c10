// rlcockpit dashboard core: DOM building, API access, formatting, metric-guide tooltips, downloads.
//
// Safety rule for the whole front-end: data (run names, configs, model outputs) only ever reaches
// the page through textContent / text nodes built by el(). Nothing here uses innerHTML, so a
// sample containing <script> or <img onerror=...> renders as inert text. The server's CSP
// (default-src 'self', no inline script) is the second line of defence.

import { getLang, t } from "./i18n.js";

/** Create an element. attrs: {class, text, title, href, type, value, dataset:{}, on:{event: fn}, ...}. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "href") node.setAttribute("href", safeHref(v));
    else if (k === "style") Object.assign(node.style, v);
    else if (k in node && typeof v !== "string") node[k] = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/** Only in-app hash links and relative API links are produced; anything else (javascript:...) is neutralised. */
export function safeHref(v) {
  const s = String(v);
  return s.startsWith("#") || s.startsWith("/api/") || s.startsWith("/static/") ? s : "#";
}

export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

// ---- API ------------------------------------------------------------------------------------

export function apiUrl(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  return path + (q.toString() ? "?" + q.toString() : "");
}

/** GET a JSON API path with query params; throws Error(message from the server) on HTTP errors. */
export async function api(path, params = {}, opts = {}) {
  const resp = await fetch(apiUrl(path, params), { credentials: "same-origin", signal: opts.signal, cache: "no-store" });
  let body = null;
  try { body = await resp.json(); } catch (e) { body = null; }
  if (!resp.ok) throw new Error((body && body.error) || `${resp.status} ${resp.statusText} for ${path}`);
  return body;
}

export function runPath(id) { return "/api/runs/" + encodeURIComponent(id); }

// ---- formatting -----------------------------------------------------------------------------

export function fmtNum(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  if (Number.isInteger(v)) return String(v);
  return Number(v.toPrecision(4)).toString();
}

export function fmtTime(ts) {
  if (!ts) return "–";
  const d = new Date(ts * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmtDuration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  const neg = s < 0 ? "-" : "";
  s = Math.abs(s);
  if (s < 60) return `${neg}${s.toFixed(s < 10 && s % 1 ? 1 : 0)}s`;
  if (s < 3600) return `${neg}${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  if (s < 86400) return `${neg}${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${neg}${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

/** Right-align the header of each column whose first body cell is a number (td.num), as its values are. */
export function alignNumHeads(table) {
  const first = table.querySelector("tbody tr");
  const heads = table.querySelectorAll("thead th");
  if (first) [...first.children].forEach((td, i) => { if (heads[i]) heads[i].classList.toggle("num", td.classList.contains("num")); });
  return table;
}

export function fmtAgo(ts, now) { return ts ? t("time.ago", { d: fmtDuration((now || Date.now() / 1000) - ts) }) : "–"; }

export function fmtValue(v) {
  if (typeof v === "number") return fmtNum(v);
  if (v === null || v === undefined) return "–";
  return typeof v === "string" ? v : JSON.stringify(v);
}

export function statusPill(status) { return el("span", { class: "pill " + status, text: t("status." + status) }); }

export function severityBadges(counts) {
  return ["critical", "warning", "info"].map((s) =>
    el("span", { class: "sev " + (counts && counts[s] ? s : "zero"), title: t("severity." + s), text: (counts && counts[s]) || 0 }));
}

/** Debounce fn by ms (search boxes). */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// ---- metric guide + tooltips ------------------------------------------------------------------

let guide = { entries: {}, aliases: {}, patterns: [] };
let compiled = [];

export async function loadGuide() {
  try {
    guide = await api("/api/guide", { lang: getLang() });
    compiled = (guide.patterns || []).map((p) => ({ rx: new RegExp("^" + p.regex + "$"), entry: p.entry }));
  } catch (e) { guide = { entries: {}, aliases: {}, patterns: [] }; compiled = []; }
}

/** The guide entry for a metric key (canonical, alias or pattern match), or null. */
export function guideEntry(key) {
  if (guide.entries[key]) return guide.entries[key];
  const target = guide.aliases && guide.aliases[key];
  if (target && guide.entries[target]) return guide.entries[target];
  for (const p of compiled) if (p.rx.test(key)) return guide.entries[p.entry] || null;
  return null;
}

// Extension points for another front-end module loaded on the same page (the team server's team.js):
// targets(key) -> [{value, label}] drawn as horizontal lines on that metric's charts; routes[name] ->
// async (root, parts, params) => dispose, for hash routes "#/<name>/..." this dashboard does not know.
export const extensions = { targets: () => [], routes: {} };

export function kpiTargets(key) {
  try { return extensions.targets(key) || []; } catch (e) { return []; }
}

export function healthyRange(key) {
  const e = guideEntry(key);
  return e && Array.isArray(e.healthy) ? e.healthy : null;
}

const tipEl = () => document.getElementById("tip");

/** Show the floating tooltip with content at the pointer, kept inside the window. */
export function showTip(content, clientX, clientY) {
  const tip = tipEl();
  clear(tip).appendChild(content);
  tip.hidden = false;
  placeTip(clientX, clientY);
}

export function hideTip() { tipEl().hidden = true; }

/** Position the tooltip next to (x, y), flipped and clamped so it never leaves the window. */
export function placeTip(x, y) {
  const tip = tipEl();
  const w = tip.offsetWidth, h = tip.offsetHeight, W = window.innerWidth, H = window.innerHeight;
  let left = x + 14, top = y + 14;
  if (left + w > W - 6) left = x - w - 14;
  if (top + h > H - 6) top = y - h - 14;
  tip.style.left = Math.max(4, Math.min(left, W - w - 4)) + "px";
  tip.style.top = Math.max(4, Math.min(top, H - h - 4)) + "px";
}

/** Show a floating tooltip with nodes built by build() while the pointer is over target. */
export function attachTip(target, build) {
  target.addEventListener("mouseenter", (ev) => { const c = build(); if (c) showTip(c, ev.clientX, ev.clientY); });
  target.addEventListener("mousemove", (ev) => { if (!tipEl().hidden) placeTip(ev.clientX, ev.clientY); });
  target.addEventListener("mouseleave", hideTip);
}

/** Tooltip content for a metric name: the guide's title, meaning, healthy range and action. */
export function metricTip(key) {
  const e = guideEntry(key);
  const box = el("div", {}, el("div", { class: "t-key", text: key }));
  if (!e) { box.appendChild(el("p", { class: "muted", text: t("guide.unknown") })); return box; }
  box.prepend(el("div", { class: "t-title", text: e.title || e.key }));
  if (e.meaning) box.appendChild(el("p", { text: e.meaning }));
  const label = (k) => el("span", { class: "t-label", text: t(k) + " " });
  if (e.healthy) box.appendChild(el("p", {}, label("guide.healthy"),
    `${e.healthy[0] ?? "−∞"} … ${e.healthy[1] ?? "+∞"}`, e.healthy_note ? ` (${e.healthy_note})` : ""));
  else if (e.healthy_note) box.appendChild(el("p", {}, label("guide.healthy"), e.healthy_note));
  if (e.abnormal) box.appendChild(el("p", {}, label("guide.abnormal"), e.abnormal));
  if (e.action) box.appendChild(el("p", {}, label("guide.action"), e.action));
  return box;
}

// ---- page chrome ------------------------------------------------------------------------------

/** Set the breadcrumb trail: items are [label, href|null]. */
export function setCrumbs(items) {
  const nav = clear(document.getElementById("crumbs"));
  items.forEach(([label, href], i) => {
    if (i) nav.appendChild(el("span", { class: "sep", text: "/" }));
    nav.appendChild(href ? el("a", { href, text: label }) : el("span", { text: label }));
  });
}

export function setLive(on) {
  const dot = document.getElementById("live-indicator");
  dot.hidden = !on;
  dot.textContent = t("live");
}

export function errorBox(err) { return el("div", { class: "error", text: String(err && err.message ? err.message : err) }); }

/** Copy text to the clipboard (Clipboard API on localhost; textarea fallback elsewhere). */
export async function copyText(text) {
  try { await navigator.clipboard.writeText(text); return true; } catch (e) { /* fall back */ }
  const ta = el("textarea", { class: "offscreen" });
  ta.value = text;
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
  ta.remove();
  return ok;
}

/** Save a Blob as a file named name (an <a download> on a blob: URL; nothing leaves the page). */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { class: "offscreen" });
  a.setAttribute("href", url);
  a.setAttribute("download", name);
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 5000);
}

export function safeFileName(s) { return String(s).replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 120) || "chart"; }

export const PALETTE = ["#4c8dff", "#f0883e", "#3fb950", "#bc8cff", "#f85149", "#39c5cf", "#d29922", "#db61a2",
  "#8b949e", "#a5d6ff", "#7ee787", "#ffa657", "#d2a8ff", "#79c0ff", "#ff7b72"];

export function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

function b64ToFloats(s) {
  const bin = atob(s || "");
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Float64Array(bytes.buffer);
}

/** A series from the API in either format as plain arrays {steps, values, ts, nonfinite};
 *  non-finite values become null (gaps; the chart marks them from `nonfinite`). */
export function decodeSeries(s) {
  if (!s) return { steps: [], values: [], ts: [], nonfinite: [] };
  if (s.values_b64 === undefined) return { steps: s.steps, values: s.values, ts: s.ts, nonfinite: s.nonfinite || [] };
  const values = Array.from(b64ToFloats(s.values_b64), (v) => (Number.isFinite(v) ? v : null));
  return { steps: Array.from(b64ToFloats(s.steps_b64)), values, ts: Array.from(b64ToFloats(s.ts_b64)), nonfinite: s.nonfinite || [],
    downsampled: s.downsampled };
}

/** A metric-name filter: a regular expression (case-insensitive); an invalid one falls back to a substring. */
export function metricMatcher(text) {
  const q = (text || "").trim();
  if (!q) return { test: () => true, invalid: false };
  try { const rx = new RegExp(q, "i"); return { test: (k) => rx.test(k), invalid: false }; } catch (e) {
    const low = q.toLowerCase();
    return { test: (k) => k.toLowerCase().includes(low), invalid: true };
  }
}
