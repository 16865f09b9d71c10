// rlcockpit dashboard entry point: hash router, theme and language.
//
// Routes: #/                       runs list (?project=&q=&status=&group=&tag=&filter=&cols=&sort=&desc=)
//         #/run/<id>[/<tab>]       run page: charts (default), samples, phases, mismatch, diagnosis, config
//         #/compare?runs=a,b       compare runs
//         #/sweeps, #/sweep/<id>   sweeps; one sweep (trials, parallel coordinates, best so far, importance)
// Each page renderer returns a dispose() that closes its live stream when the route changes.

import { clear, el, errorBox, extensions, hideTip, loadGuide, setLive } from "./core.js";
import { LANGS, getLang, initLang, setLang, t } from "./i18n.js";
import { renderCompare } from "./compare.js";
import { renderRun } from "./run.js";
import { renderRuns } from "./runs.js";
import { renderSweep, renderSweeps } from "./sweeps.js";
import { hashParts } from "./state.js";

let dispose = null;
let routing = 0;

async function route() {
  const mine = ++routing;
  if (dispose) { try { dispose(); } catch (e) { /* ignore */ } dispose = null; }
  setLive(false);
  hideTip();
  document.querySelectorAll(".modal").forEach((m) => m.remove());
  // each render gets its own container: a render that a newer one overtook (a hash change while it waited for
  // the server) writes into a detached node, never beside the newer page (no doubled toolbars or errors)
  const root = el("div", { class: "view" });
  clear(document.getElementById("app")).appendChild(root);
  const { parts, params } = hashParts();
  try {
    const wanted = params.get("lang");  // a pasted link's ?lang= applies on a hash change too, not only on load
    if (LANGS.includes(wanted) && wanted !== getLang()) {
      await initLang(wanted);
      await loadGuide();
      chrome();
      if (mine !== routing) return;
    }
    let d;
    if (parts.length === 0 || parts[0] === "runs") d = await renderRuns(root, params);
    else if (parts[0] === "run" && parts[1]) d = await renderRun(root, parts[1], parts[2] || "charts", params);
    else if (parts[0] === "compare") d = await renderCompare(root, params);
    else if (parts[0] === "sweeps") d = await renderSweeps(root, params);
    else if (parts[0] === "sweep" && parts[1]) d = await renderSweep(root, parts[1], params);
    else if (extensions.routes[parts[0]]) d = await extensions.routes[parts[0]](root, parts, params);
    else root.appendChild(el("div", { class: "empty", text: t("nav.unknown") }));
    if (mine !== routing) { if (d) d(); return; }
    dispose = d || null;
    document.body.dataset.page = parts[0] || "runs";
  } catch (err) {
    root.appendChild(errorBox(err));
  }
}

function chrome() {
  const theme = document.getElementById("theme-toggle");
  theme.textContent = t("nav.theme");
  theme.title = t("nav.theme.title");
  const lang = document.getElementById("lang-select");
  lang.value = getLang();
  document.getElementById("brand-name").textContent = "rlcockpit";
  document.getElementById("nav-sweeps").textContent = t("nav.sweeps");
}

function initTheme() {
  const saved = localStorage.getItem("rlcockpit-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.getElementById("theme-toggle").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "light" ? "dark" : "light";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("rlcockpit-theme", next);
    route();
  });
}

async function start() {
  await initLang(hashParts().params.get("lang"));
  initTheme();
  document.getElementById("lang-select").addEventListener("change", async (e) => {
    await setLang(e.target.value);
    await loadGuide();
    chrome();
    route();
  });
  chrome();
  await loadGuide();
  window.addEventListener("hashchange", route);
  await route();
}

start();
