"""Health engine: detectors, sample analysis, findings and diagnosis."""

from rlcockpit.health.findings import SEVERITIES, Action, Cause, Finding, severity_rank

__all__ = ["SEVERITIES", "Action", "Cause", "Finding", "severity_rank"]
