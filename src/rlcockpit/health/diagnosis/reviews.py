"""People's judgement as evidence: samples a reviewer rated *reward-hacked* on the team server.

The team server stores such a rating as a finding of the run (detector ``human_rating``, see
``rlcockpit/server/routes_team.py``). A diagnosis replays the detectors over the stored metrics and samples,
which cannot reproduce a person's rating, so :func:`reviewer_findings` reads them back from the store and
the diagnosis lists them with the detectors' findings (and counts them).
"""

from __future__ import annotations

from typing import Any

from rlcockpit.health.findings import Finding

DETECTOR = "human_rating"


def reviewer_findings(store: Any, run_id: str) -> list[Finding]:
    """The run's stored ``human_rating`` findings as :class:`Finding` objects (oldest step first)."""
    out = []
    for d in store.findings(run_id):
        if d.get("detector") != DETECTOR:
            continue
        evidence = d.get("evidence") if isinstance(d.get("evidence"), dict) else {}
        out.append(Finding(detector=DETECTOR, severity=str(d.get("severity") or "warning"), step=int(d.get("step") or 0),
                           title=str(d.get("title") or "A reviewer rated a sample as reward hacking"),
                           summary=str(d.get("summary") or ""), evidence=evidence,
                           created_at=float(d.get("created_at") or 0.0)))
    return sorted(out, key=lambda f: f.step)
