// The Phases tab (step-phase timeline from timing_s/*, with perf/mfu/* and throughput) and the
// Mismatch tab (rollout engine vs. actor probabilities against verl's documented bounds).

import { alignNumHeads, api, el, fmtNum, PALETTE, runPath } from "./core.js";
import { t } from "./i18n.js";
import { SyncGroup } from "./chart.js";
import { chartCard } from "./chartkit.js";
import { settings } from "./state.js";

const PHASE_COLORS = { generation: "#4c8dff", sample_wait: "#1f6feb", reward: "#d29922", log_prob: "#39c5cf", reference: "#a5d6ff", values: "#7ee787",
  advantage: "#db61a2", update: "#3fb950", sync: "#bc8cff", validation: "#f0883e", checkpoint: "#8b949e", idle: "#f85149" };

function stacked(data, share) {
  // each phase drawn as the band between the cumulative sums below and including it
  const n = data.steps.length, below = new Array(n).fill(0), specs = [];
  for (const p of data.phases) {
    const vals = share ? p.share : p.seconds;
    const lo = below.slice(), hi = below.map((b, i) => b + (vals[i] ?? 0));
    for (let i = 0; i < n; i++) below[i] = hi[i];
    specs.push({ id: p.name, name: t("phase." + p.name), color: PHASE_COLORS[p.name] || PALETTE[specs.length % PALETTE.length],
      steps: data.steps, ts: data.steps, values: hi.map((v, i) => (vals[i] === null ? null : v)), lo, hi, nonfinite: [] });
  }
  return specs;
}

export async function renderPhases(body, detail) {
  const data = await api(runPath(detail.run.id) + "/timeline");
  const s = settings("phases", { share: false });
  if (!data.available) {
    body.appendChild(el("div", { class: "empty", id: "phases-empty", text: t("phases.none") }));
    return {};
  }
  const group = new SyncGroup();
  const mode = el("select", { id: "phase-mode" }, el("option", { value: "seconds", text: t("phases.seconds") }), el("option", { value: "share", text: t("phases.share") }));
  mode.value = s.values.share ? "share" : "seconds";
  const main = chartCard("timing_s/*", { group, height: 260 });
  main.card.id = "phase-chart";
  main.card.querySelector(".name").textContent = t("phases.title");
  const draw = () => { main.chart.setSeries(stacked(data, mode.value === "share")); main.refresh(); main.last.textContent = ""; };
  mode.addEventListener("change", () => { s.set("share", mode.value === "share"); draw(); });
  const rows = data.phases.map((p) => el("tr", { dataset: { phase: p.name } },
    el("td", {}, el("span", { class: "sw", style: { background: PHASE_COLORS[p.name] || "#888" } }), t("phase." + p.name)),
    el("td", { class: "mono", text: (p.keys || []).join(", ") || (p.name === "idle" ? t("phases.idleKeys") : "") }),
    el("td", { class: "num", text: data.mean_share[p.name] === null ? "–" : (data.mean_share[p.name] * 100).toFixed(1) + "%" })));
  const table = alignNumHeads(el("table", { class: "grid", id: "phase-table" }, el("thead", {}, el("tr", {}, el("th", { text: t("phases.phase") }),
    el("th", { text: t("phases.keys") }), el("th", { text: t("phases.meanShare") }))), el("tbody", {}, rows)));
  const extra = el("div", { class: "charts" });
  body.append(el("div", { class: "toolbar" }, el("label", {}, t("phases.show"), mode), el("span", { class: "muted", text: data.step_key ? t("phases.stepKey", { k: data.step_key }) : "" })),
    main.card, el("div", { class: "two-col" }, el("div", { class: "card" }, el("h3", { text: t("phases.breakdown") }), table),
      el("div", {}, data.unassigned.length ? el("p", { class: "muted", id: "phase-unassigned", text: t("phases.unassigned", { keys: data.unassigned.join(", ") }) }) : null)),
    el("div", { class: "section-title", text: t("phases.perf") }), extra);
  draw();
  const perfCharts = [];
  for (const [key, ser] of Object.entries({ ...data.mfu, ...data.throughput })) {
    const c = chartCard(key, { group });
    extra.appendChild(c.card);
    c.chart.setSeries([{ id: detail.run.id, name: detail.run.name, color: PALETTE[0], steps: ser.steps, ts: ser.steps, values: ser.values, nonfinite: [] }]);
    c.refresh();
    perfCharts.push(c);
  }
  if (!perfCharts.length) extra.appendChild(el("div", { class: "muted", text: t("phases.noPerf") }));
  return { dispose() { main.chart.destroy(); perfCharts.forEach((c) => c.chart.destroy()); } };
}

function bound(th) {
  if (!th) return "–";
  if (th.abs) return `|x| ≤ ${th.high}`;
  if (th.low !== null && th.low !== undefined && th.high !== null && th.high !== undefined) return `${th.low} … ${th.high}`;
  if (th.low !== null && th.low !== undefined) return `≥ ${th.low}`;
  if (th.high !== null && th.high !== undefined) return `≤ ${th.high}`;
  return th.ideal !== undefined ? t("mismatch.ideal", { v: th.ideal }) : "–";
}

export async function renderMismatch(body, detail) {
  const data = await api(runPath(detail.run.id) + "/mismatch");
  if (!data.available) {
    body.appendChild(el("div", { class: "empty", id: "mismatch-empty" }, el("p", { text: t("mismatch.none") }),
      el("pre", { class: "block", text: "actor_rollout_ref.rollout.calculate_log_probs=True\nalgorithm.rollout_correction.rollout_is=token" })));
    return {};
  }
  const group = new SyncGroup();
  const rows = data.metrics.map((m) => el("tr", { dataset: { key: m.key }, class: "st-" + m.status },
    el("td", { class: "mono", text: m.key }), el("td", { class: "num", text: fmtNum(m.latest) }), el("td", { class: "mono", text: bound(m.threshold) }),
    el("td", {}, el("span", { class: "pill " + (m.status === "out" ? "failed" : m.status === "ok" ? "finished" : "running"), text: t("mismatch.status." + m.status) })),
    el("td", { class: "num", text: m.threshold ? String(m.steps_out_of_bounds) : "–" }),
    el("td", { class: "muted", text: m.threshold ? t("mismatch.source." + m.threshold.source) : "" })));
  const table = el("table", { class: "grid", id: "mismatch-table" }, el("thead", {}, el("tr", {},
    ["mismatch.metric", "mismatch.latest", "mismatch.bound", "mismatch.verdict", "mismatch.stepsOut", "mismatch.source"].map((k) => el("th", { text: t(k) })))),
  el("tbody", {}, rows));
  alignNumHeads(table);
  const grid = el("div", { class: "charts", id: "mismatch-charts" });
  body.append(el("p", { class: "muted", text: t("mismatch.intro") }), el("div", { class: "card" }, table), grid);
  const made = [];
  for (const m of data.metrics) {
    const th = m.threshold;
    const healthy = th && (th.low !== undefined || th.high !== undefined) ? [th.abs ? -th.high : th.low ?? null, th.high ?? null] : null;
    const c = chartCard(m.key, { group, healthy });
    grid.appendChild(c.card);
    c.chart.setSeries([{ id: detail.run.id, name: detail.run.name, color: PALETTE[0], steps: m.steps, ts: m.steps, values: m.values, nonfinite: [] }]);
    c.refresh();
    made.push(c);
  }
  return { dispose() { made.forEach((c) => c.chart.destroy()); } };
}
