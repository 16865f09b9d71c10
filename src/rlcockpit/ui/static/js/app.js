// rlcockpit dashboard entry point: hash router and theme.
//
// Routes: #/            runs list (?project=&q=)
//         #/run/<id>    run page, tabs: charts (default), samples, diagnosis, config
//         #/compare?runs=a,b
// Each page renderer returns a dispose() that stops its timers when the route changes.

import { clear, el, errorBox, loadGuide, setLive } from "./core.js";
import { renderRun, renderRuns } from "./pages.js";
import { renderCompare } from "./views.js";

let dispose = null;

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(qs || "") };
}

async function route() {
  if (dispose) { try { dispose(); } catch (e) { /* ignore */ } dispose = null; }
  setLive(false);
  const root = clear(document.getElementById("app"));
  const { parts, params } = parseHash();
  try {
    if (parts.length === 0 || parts[0] === "runs") dispose = await renderRuns(root, params);
    else if (parts[0] === "run" && parts[1]) dispose = await renderRun(root, parts[1], parts[2] || "charts", params);
    else if (parts[0] === "compare") dispose = await renderCompare(root, params);
    else root.appendChild(el("div", { class: "empty", text: "Unknown page." }));
  } catch (err) {
    root.appendChild(errorBox(err));
  }
}

function initTheme() {
  const saved = localStorage.getItem("rlcockpit-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.getElementById("theme-toggle").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "light" ? "dark" : "light";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("rlcockpit-theme", next);
    window.dispatchEvent(new Event("resize"));
    document.querySelectorAll(".chart-box").forEach((b) => b.dispatchEvent(new Event("rlc-redraw")));
  });
}

initTheme();
window.addEventListener("hashchange", route);
loadGuide().finally(route);
