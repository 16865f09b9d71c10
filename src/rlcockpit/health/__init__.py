"""Health engine: detectors, sample analysis, findings and diagnosis.

Live: ``HealthMonitor(settings, run_config).observe(step, metrics)`` on the tracking writer thread.
Post-mortem: ``diagnose_run(store, run_id)`` replays a stored run through the same detectors and links the
findings into a root-cause chain; ``render_html_report`` renders it as one self-contained HTML file.
"""

from rlcockpit.health.base import DETECTORS, Detector
from rlcockpit.health.findings import SEVERITIES, Action, Cause, Finding, severity_rank
from rlcockpit.health.monitor import HealthMonitor, format_finding_console
from rlcockpit.health.samples import analyze_samples

__all__ = [
    "DETECTORS",
    "SEVERITIES",
    "Action",
    "Cause",
    "Detector",
    "Finding",
    "HealthMonitor",
    "analyze_samples",
    "diagnose_run",
    "format_finding_console",
    "render_html_report",
    "severity_rank",
]


def __getattr__(name: str):  # diagnosis/report import the store lazily: keep ``import rlcockpit.health`` light
    if name == "diagnose_run":
        from rlcockpit.health.diagnosis.diagnose import diagnose_run

        return diagnose_run
    if name == "render_html_report":
        from rlcockpit.health.diagnosis.report import render_html_report

        return render_html_report
    raise AttributeError(name)
