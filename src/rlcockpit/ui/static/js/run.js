// The run page: header (status, step, duration, data-loss banner), tabs, and the live stream that keeps
// every tab current. Tabs: charts (charts.js), samples, phases + mismatch (panels.js), diagnosis, config.

import { api, clear, el, fmtDuration, fmtTime, runPath, setCrumbs, setLive, severityBadges, statusPill } from "./core.js";
import { getLang, t } from "./i18n.js";
import { openRunStream } from "./live.js";
import { renderCharts } from "./charts.js";
import { renderConfig, renderDiagnosis } from "./diagnosis.js";
import { renderMismatch, renderPhases } from "./panels.js";
import { renderSamples } from "./samples.js";

const TABS = ["charts", "samples", "phases", "mismatch", "diagnosis", "config"];

/** The tracker's data_lost events (what, why, which steps) as a banner nobody can miss. */
function dataLostBanner(detail) {
  const lost = detail.data_lost || [];
  if (!lost.length) return null;
  const parts = lost.map((e) => {
    const p = e.payload || {};
    const ranges = Array.isArray(p.ranges) ? p.ranges.map((r) => (Array.isArray(r) ? (r[0] === r[1] ? `${r[0]}` : `${r[0]}–${r[1]}`) : String(r))).join(", ") : "";
    const what = [p.what ? t("lost.what", { what: p.what }) : null, ranges ? t("lost.steps", { ranges }) : null,
      p.entries !== undefined ? t("lost.entries", { n: p.entries }) : null, p.points !== undefined ? t("lost.points", { n: p.points }) : null,
      p.reason ? t("lost.reason", { reason: p.reason }) : null, p.sink ? t("lost.sink", { sink: p.sink }) : null, p.message || null].filter(Boolean).join(" · ");
    return el("li", { text: what || JSON.stringify(p).slice(0, 200) });
  });
  return el("div", { class: "banner lost", id: "data-lost", role: "alert" }, el("strong", { text: t("lost.title") }),
    el("span", { text: " " + t("lost.body") }), el("ul", {}, parts));
}

export async function renderRun(root, id, tab, params) {
  const detail = await api(runPath(id) + "?lang=" + getLang());  // findings' texts in the UI's language
  const run = detail.run;
  if (!TABS.includes(tab)) tab = "charts";
  setCrumbs([[t("nav.runs"), "#/?project=" + encodeURIComponent(run.project)], [run.project, "#/?project=" + encodeURIComponent(run.project)], [run.name, null]]);
  const head = el("div", { class: "run-head" });
  const drawHead = () => {
    // an imported run's times are those of the import (seconds), not of the training it records
    const imported = Boolean(run.meta && run.meta.imported);
    const dur = (run.finished_at || detail.now) - run.created_at;
    clear(head).append(el("h1", { text: run.name, id: "run-name" }), statusPill(run.status),
      el("span", { class: "meta" }, el("span", { class: "mono", text: run.id }), run.group ? el("span", { text: t("run.group", { g: run.group }) }) : null,
        el("span", { id: "run-step", text: t("run.step", { n: run.last_step ?? "–" }) }), el("span", { id: "run-started", text: t(imported ? "run.imported" : "run.started", { t: fmtTime(run.created_at) }),
          title: imported ? t("run.imported.title") : "" }),
        imported ? null : el("span", { id: "run-duration", text: t("run.duration", { d: fmtDuration(dur) }) })),
      el("span", {}, (run.tags || []).map((x) => el("span", { class: "tag", text: x }))),
      el("span", { class: "grow" }), el("span", {}, severityBadges(detail.finding_counts)));
  };
  drawHead();
  const banner = el("div", { id: "banner-slot" });
  const drawBanner = () => { clear(banner); const b = dataLostBanner(detail); if (b) banner.appendChild(b); };
  drawBanner();
  const base = "#/run/" + encodeURIComponent(run.id);
  const tabLinks = {};
  const label = (k) => (k === "samples" ? t("tab.samples", { n: detail.sample_steps.length }) : t("tab." + k));
  root.append(head, banner, el("nav", { class: "tabs" }, TABS.map((k) => {
    tabLinks[k] = el("a", { href: k === "charts" ? base : base + "/" + k, class: k === tab ? "active" : "", id: "tab-" + k, text: label(k) });
    return tabLinks[k];
  })));
  const body = el("div", { id: "tab-body" });
  root.appendChild(body);
  const view = await ({ charts: renderCharts, samples: renderSamples, phases: renderPhases, mismatch: renderMismatch,
    diagnosis: renderDiagnosis, config: renderConfig })[tab](body, detail, params);
  let close = () => {};
  if (run.status === "running") {
    setLive(true);
    close = openRunStream(detail, {
      points: (d) => { if (view.onPoints) view.onPoints(d); },
      findings: (d) => { Object.assign(detail, d); drawHead(); drawBanner(); if (view.onFindings) view.onFindings(d); },
      samples: (d) => { detail.sample_steps = d.sample_steps; tabLinks.samples.textContent = label("samples"); if (view.onSamples) view.onSamples(d); },
      status: (d) => { Object.assign(run, { status: d.status, last_step: d.last_step, finished_at: d.finished_at, heartbeat_at: d.heartbeat_at });
        detail.now = d.now; drawHead(); if (d.status !== "running") setLive(false); },
      end: () => setLive(false),
    });
  }
  return () => { close(); if (view.dispose) view.dispose(); };
}
