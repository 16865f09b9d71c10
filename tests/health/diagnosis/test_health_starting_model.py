"""Bad samples before any update are the starting model's (issue 29): an untrained model's samples at step 1 (KL 0)
were flagged CRITICAL and blamed on the KL, with KL overrides that cannot act before an update."""

from __future__ import annotations

from rlcockpit.health import HealthMonitor
from rlcockpit.health.diagnosis.diagnose import diagnose_findings

CONFIG = {"actor": {"kl_loss_coef": 0.001, "use_kl_loss": True}}


def rows(text: str) -> list[dict]:
    return [{"prompt": f"Q{i}: 2+{i}?", "response": text.format(i=i), "reward": 0.0} for i in range(8)]


def replay(kl_at_2: float) -> list:
    mon = HealthMonitor(None, CONFIG)
    found = []
    # an untrained model rambles at step 0 and loops outright at step 1: noise of the starting model
    for step, text in ((0, "so {i} plus two is maybe four or the the sum is it"),
                       (1, "the the the the the the the the the the the the the the"),
                       (2, "the the the the the the the the the the the the the the")):
        found += mon.observe(step, {"actor/kl_loss": 0.0 if step < 2 else kl_at_2, "critic/score/mean": 0.0})
        found += mon.observe_samples(step, rows(text))[1]
    return found


def test_degenerate_samples_before_any_update_blame_the_starting_model():
    found = [f for f in replay(0.0) if f.detector == "sample_degeneration"]
    assert found and {f.severity for f in found} == {"warning"}
    first = found[0]
    assert "starting model" in first.causes[0].title and "actor/kl_loss is 0" in first.causes[0].evidence
    assert not any("kl" in " ".join(a.overrides).lower() for a in first.actions)
    assert diagnose_findings(found, CONFIG)["root_cause"] is None


def test_once_the_policy_moved_a_degeneration_is_a_collapse_again():
    mon = HealthMonitor(None, CONFIG)
    found = []
    for step in range(12):
        found += mon.observe(step, {"actor/kl_loss": 0.002 * step, "critic/score/mean": 0.5})
        text = "The answer is {i}." if step < 10 else "the the the the the the the the the the the the the the"
        found += mon.observe_samples(step, rows(text))[1]
    crit = [f for f in found if f.detector == "sample_degeneration" and f.severity == "critical"]
    assert crit and "starting model" not in crit[0].causes[0].title
