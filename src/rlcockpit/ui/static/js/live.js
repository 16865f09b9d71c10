// Live updates by server-sent events (EventSource reconnects by itself and resumes from Last-Event-ID).

import { apiUrl, runPath } from "./core.js";
import { getLang } from "./i18n.js";

const RUN_EVENTS = ["points", "findings", "samples", "status"];

/** Stream a run's changes since the page loaded `detail`; handlers: {points, findings, samples, status, end}.
 *  Returns close(). */
export function openRunStream(detail, handlers) {
  const url = apiUrl(runPath(detail.run.id) + "/live", {
    since: detail.run.last_step, t: detail.now, findings: detail.findings.length, events: detail.events.length,
    samples: detail.sample_steps.length, lang: getLang(),
  });
  const es = new EventSource(url);
  for (const name of RUN_EVENTS) es.addEventListener(name, (e) => { if (handlers[name]) handlers[name](JSON.parse(e.data)); });
  es.addEventListener("end", () => { es.close(); if (handlers.end) handlers.end(); });
  return () => es.close();
}

/** Call onChange() whenever the runs list changes (new runs, status, progress). Returns close(). */
export function openRunsStream(project, onChange) {
  const es = new EventSource(apiUrl("/api/live/runs", { project }));
  es.addEventListener("changed", () => onChange());
  return () => es.close();
}
