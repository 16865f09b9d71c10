// The Diagnosis tab (root-cause chain, findings, overrides to copy, the sandboxed HTML report) and the
// Config & meta tab.

import { api, attachTip, copyText, el, guideEntry, metricTip, runPath } from "./core.js";
import { getLang, t } from "./i18n.js";

function copyBlock(title, lines, id) {
  const text = lines.join("\n");
  const status = el("span", { class: "muted" });
  const btn = el("button", { type: "button", class: "btn small", id, text: t("diag.copy"), on: { click: async () => {
    status.textContent = (await copyText(text)) ? t("diag.copied") : t("diag.copyFailed");
  } } });
  return el("div", {}, el("div", { class: "copy-row" }, el("strong", { text: title }), el("span", {}, status, " ", btn)),
    el("pre", { class: "block overrides", text }));
}

function describe(v) { return typeof v === "string" ? v : v && (v.title || v.summary || v.text) ? (v.title || v.summary || v.text) : JSON.stringify(v); }

function findingCard(f) {
  const sev = f.severity || "info";
  const range = `${f.step_start ?? f.step}` + (f.step_end !== undefined && f.step_end !== null && f.step_end !== f.step_start ? `–${f.step_end}` : "");
  const metric = f.metric ? el("span", { class: "mono", text: f.metric }) : null;
  if (metric) attachTip(metric, () => metricTip(f.metric));
  const box = el("div", { class: "finding " + sev },
    el("h4", { title: f.title_en || "" }, el("span", { class: "sev " + sev, text: t("severity." + sev) }), " ", f.title || t("diag.untitled")),
    el("div", { class: "sub" }, `${f.detector || ""} · ${t("chart.step", { n: range })}` + (metric ? " · " : ""), metric));
  if (f.summary) box.appendChild(el("p", { text: f.summary }));
  const guide = f.metric ? guideEntry(f.metric) : null;  // the metric guide, in the page's language
  if (guide && (guide.abnormal || guide.action)) box.appendChild(el("div", { class: "finding-guide" },
    el("strong", { text: t("diag.guide", { title: guide.title || f.metric }) }),
    guide.abnormal ? el("p", {}, el("span", { class: "muted", text: t("guide.abnormal") + " " }), guide.abnormal) : null,
    guide.action ? el("p", {}, el("span", { class: "muted", text: t("guide.action") + " " }), guide.action) : null));
  if (f.causes && f.causes.length) box.appendChild(el("div", {}, el("strong", { text: t("diag.causes") }), el("ul", {}, f.causes.map((c) => {
    const bar = el("span", { class: "score" }, el("span"));
    bar.firstChild.style.width = Math.round((c.score ?? 0.5) * 100) + "%";
    return el("li", {}, bar, " ", c.title, c.evidence ? el("span", { class: "muted", text: " — " + c.evidence }) : null);
  }))));
  if (f.actions && f.actions.length) box.appendChild(el("div", {}, el("strong", { text: t("diag.actions") }), el("ul", {}, f.actions.map((a) =>
    el("li", {}, a.title, a.why ? el("span", { class: "muted", text: " — " + a.why }) : null,
      a.overrides && a.overrides.length ? el("pre", { class: "block", text: a.overrides.join("\n") }) : null)))));
  return box;
}

export async function renderDiagnosis(body, detail) {
  const data = await api(runPath(detail.run.id) + "/diagnosis?lang=" + getLang());  // texts in the UI's language
  const diag = data.diagnosis || {};
  const order = ["critical", "warning", "info"];
  const findings = (diag.findings || []).slice().sort((a, b) => order.indexOf(a.severity) - order.indexOf(b.severity) || (a.step ?? 0) - (b.step ?? 0));
  const left = el("div", { id: "diagnosis" }), right = el("div");
  body.appendChild(el("div", { class: "two-col" }, left, right));
  const rc = diag.root_cause;
  const rcBody = el("div", { class: "card-body" });
  left.appendChild(el("div", { class: "card", id: "root-cause" }, el("h3", { text: t("diag.rootCause") }), rcBody));
  if (rc) {
    rcBody.appendChild(el("h4", { text: describe(rc) }));
    if (rc.summary && rc.title) rcBody.appendChild(el("p", { text: rc.summary }));
    const chain = rc.chain || rc.steps || rc.path || [];
    if (chain.length) rcBody.appendChild(el("ol", { class: "chain" }, chain.map((c) => el("li", {}, describe(c),
      c && typeof c === "object" && (c.step !== undefined || c.detector)
        ? el("span", { class: "muted", text: `  ${c.detector || ""} ${c.step !== undefined && c.step !== null ? "@ " + t("chart.step", { n: c.step }) : ""}` }) : null))));
    if (rc.evidence) rcBody.appendChild(el("p", { class: "muted", text: typeof rc.evidence === "string" ? rc.evidence : JSON.stringify(rc.evidence) }));
  } else {
    rcBody.appendChild(el("p", { class: "muted", text: findings.length ? t("diag.noRoot") : t("diag.nothing") }));
  }
  if (data.source === "stored") left.appendChild(el("p", { class: "muted", text: t("diag.stored", { err: data.engine_error || "" }) }));
  left.appendChild(el("div", { class: "section-title", text: t("diag.findings", { n: findings.length }) }));
  findings.forEach((f) => left.appendChild(findingCard(f)));
  const fixBody = el("div", { class: "card-body" });
  right.appendChild(el("div", { class: "card" }, el("h3", { text: t("diag.overrides") }), fixBody));
  if (data.overrides.length) fixBody.appendChild(copyBlock(t("diag.trainer"), data.overrides, "copy-overrides"));
  if (data.verl_overrides.length) fixBody.appendChild(copyBlock("verl", data.verl_overrides, "copy-verl"));
  if (!data.overrides.length && !data.verl_overrides.length) fixBody.appendChild(el("p", { class: "muted", text: t("diag.noChange") }));
  if (diag.baseline && diag.baseline.note) fixBody.appendChild(el("p", { class: "muted", id: "baseline-note", text: diag.baseline.note }));
  if (data.html_report) right.appendChild(el("p", {}, el("a", { href: runPath(detail.run.id) + "/report.html", target: "_blank", rel: "noopener", id: "report-link", text: t("diag.report") })));
  return {};
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
  const keys = Object.keys(flat).sort();
  if (!keys.length) return el("div", { class: "muted", text: t("config.empty") });
  const box = el("div", { class: "kv", id });
  for (const k of keys) {
    const v = flat[k];
    box.append(el("div", { class: "k", text: k }), el("div", { class: "v", text: typeof v === "string" ? v
      : typeof v === "number" && !Number.isInteger(v) ? String(Number(v.toPrecision(6))) : JSON.stringify(v) }));
  }
  return box;
}

export async function renderConfig(body, detail) {
  const run = detail.run, meta = run.meta || {};
  const card = (title, ...content) => el("div", { class: "card" }, el("h3", { text: title }), el("div", { class: "card-body" }, ...content));
  const command = Array.isArray(meta.command) ? meta.command.join(" ") : meta.command;
  const git = meta.git || {};
  const pk = meta.packages || {};
  const pkRows = Object.keys(pk).sort().map((k) => el("tr", {}, el("td", { class: "mono", text: k }), el("td", { class: "mono", text: String(pk[k]) })));
  const rest = Object.fromEntries(Object.entries(meta).filter(([k]) => !["command", "git", "packages"].includes(k)));
  body.appendChild(el("div", { class: "two-col" },
    el("div", {}, card(t("config.config"), kvTable(run.config, "config-table"))),
    el("div", {},
      card(t("config.command"), el("pre", { class: "block", id: "run-command", text: command || t("config.none") })),
      card("Git", typeof git === "object" ? kvTable(Object.fromEntries(Object.entries(git).filter(([k]) => k !== "diff")), "git-table")
        : el("div", { class: "mono", text: String(git) }),
      typeof git === "object" && git.diff ? el("details", {}, el("summary", { class: "muted", text: t("config.diff", { n: String(git.diff).split("\n").length }) }),
        el("pre", { class: "block", text: String(git.diff) })) : null),
      card(t("config.packages"), pkRows.length ? el("table", { class: "grid" }, el("tbody", {}, pkRows)) : el("div", { class: "muted", text: t("config.none") })),
      card(t("config.host"), kvTable(rest)),
      card(t("config.summary"), kvTable(run.summary)))));
  return {};
}
