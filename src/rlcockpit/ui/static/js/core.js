// rlcockpit dashboard core: DOM building, API access, formatting, metric-guide tooltips.
//
// Safety rule for the whole front-end: data (run names, configs, model outputs) only ever reaches
// the page through textContent / text nodes built by el(). Nothing here uses innerHTML, so a
// sample containing <script> or <img onerror=...> renders as inert text. The server's CSP
// (default-src 'self', no inline script) is the second line of defence.

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

/** GET a JSON API path with query params; throws Error(message from the server) on HTTP errors. */
export async function api(path, params = {}, opts = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const url = path + (q.toString() ? "?" + q.toString() : "");
  const resp = await fetch(url, { credentials: "same-origin", signal: opts.signal, cache: "no-store" });
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
  s = Math.max(0, s);
  if (s < 60) return `${s.toFixed(0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtAgo(ts, now) { return ts ? fmtDuration((now || Date.now() / 1000) - ts) + " ago" : "–"; }

export function statusPill(status) { return el("span", { class: "pill " + status, text: status }); }

export function severityBadges(counts) {
  return ["critical", "warning", "info"].map((s) =>
    el("span", { class: "sev " + (counts && counts[s] ? s : "zero"), title: s, text: (counts && counts[s]) || 0 }));
}

/** Debounce fn by ms (search boxes). */
export function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

// ---- metric guide + tooltips ------------------------------------------------------------------

let guide = { entries: {}, aliases: {}, patterns: [] };
let compiled = [];

export async function loadGuide() {
  try {
    guide = await api("/api/guide", { lang: "en" });
    compiled = (guide.patterns || []).map((p) => ({ rx: new RegExp("^" + p.regex + "$"), entry: p.entry }));
  } catch (e) { /* tooltips are optional */ }
}

/** The guide entry for a metric key (canonical, alias or pattern match), or null. */
export function guideEntry(key) {
  if (guide.entries[key]) return guide.entries[key];
  const target = guide.aliases && guide.aliases[key];
  if (target && guide.entries[target]) return guide.entries[target];
  for (const p of compiled) if (p.rx.test(key)) return guide.entries[p.entry] || null;
  return null;
}

export function healthyRange(key) {
  const e = guideEntry(key);
  return e && Array.isArray(e.healthy) ? e.healthy : null;
}

const tipEl = () => document.getElementById("tip");

/** Show a floating tooltip with nodes built by build() while the pointer is over target. */
export function attachTip(target, build) {
  target.addEventListener("mouseenter", (ev) => {
    const tip = tipEl();
    const content = build();
    if (!content) return;
    clear(tip).appendChild(content);
    tip.hidden = false;
    placeTip(ev);
  });
  target.addEventListener("mousemove", placeTip);
  target.addEventListener("mouseleave", () => { tipEl().hidden = true; });
}

function placeTip(ev) {
  const tip = tipEl();
  const w = tip.offsetWidth, h = tip.offsetHeight;
  let x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + w > window.innerWidth - 8) x = ev.clientX - w - 14;
  if (y + h > window.innerHeight - 8) y = ev.clientY - h - 14;
  tip.style.left = Math.max(4, x) + "px";
  tip.style.top = Math.max(4, y) + "px";
}

/** Tooltip content for a metric name: the guide's title, meaning, healthy range and action. */
export function metricTip(key) {
  const e = guideEntry(key);
  const box = el("div", {}, el("div", { class: "t-key", text: key }));
  if (!e) { box.appendChild(el("p", { class: "muted", text: "Not in the metric guide." })); return box; }
  box.prepend(el("div", { class: "t-title", text: e.title || e.key }));
  if (e.meaning) box.appendChild(el("p", { text: e.meaning }));
  if (e.healthy) box.appendChild(el("p", {}, el("span", { class: "t-label", text: "Healthy: " }),
    `${e.healthy[0] ?? "−∞"} … ${e.healthy[1] ?? "+∞"}`, e.healthy_note ? ` (${e.healthy_note})` : ""));
  else if (e.healthy_note) box.appendChild(el("p", {}, el("span", { class: "t-label", text: "Healthy: " }), e.healthy_note));
  if (e.abnormal) box.appendChild(el("p", {}, el("span", { class: "t-label", text: "If abnormal: " }), e.abnormal));
  if (e.action) box.appendChild(el("p", {}, el("span", { class: "t-label", text: "Action: " }), e.action));
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

export function setLive(on) { document.getElementById("live-indicator").hidden = !on; }

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

export const PALETTE = ["#4c8dff", "#f0883e", "#3fb950", "#bc8cff", "#f85149", "#39c5cf", "#d29922", "#db61a2",
  "#8b949e", "#a5d6ff"];

function b64ToFloats(s) {
  const bin = atob(s || "");
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Float64Array(bytes.buffer);
}

/** A series from the API in either format as plain arrays {steps, values, ts, nonfinite};
 *  non-finite values become null (gaps; the chart marks them from `nonfinite`). */
export function decodeSeries(s) {
  if (s.values_b64 === undefined) return s;
  const values = Array.from(b64ToFloats(s.values_b64), (v) => (Number.isFinite(v) ? v : null));
  return { steps: Array.from(b64ToFloats(s.steps_b64)), values, ts: Array.from(b64ToFloats(s.ts_b64)), nonfinite: s.nonfinite || [] };
}
