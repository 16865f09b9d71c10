"""The diagnosis in Chinese (issue 25, finding 19d): every registered detector and story and every action title
in rlcockpit/health has a Chinese entry (so a new one is covered by construction), the texts of a diagnosed run
come out Chinese with their numbers, keys and overrides intact, and whatever has no entry stays English."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rlcockpit.health  # noqa: F401 - registers the built-in detectors
from rlcockpit.health.diagnosis.diagnose import diagnose_findings, replay
from rlcockpit.health.monitor import HealthMonitor
from rlcockpit.health.synthetic import FAILURES, make_trace
from rlcockpit.ui.analysis import clean_json
from rlcockpit.ui.i18n import catalogue, localize_diagnosis, template_shape, translate_text

HEALTH = Path(rlcockpit.health.__file__).parent
CJK = re.compile(r"[\u4e00-\u9fff]")


BUILT_IN = """
import json, rlcockpit.health
from rlcockpit.health.base import DETECTORS
from rlcockpit.health.stories import STORIES
causes = {n: getattr(DETECTORS.get(n), "cause", "") for n in DETECTORS.names()}
print(json.dumps({"detectors": {n: c if isinstance(c, str) else "" for n, c in causes.items()},
                  "stories": list(STORIES.names())}))
"""


def test_every_registered_detector_and_story_has_a_chinese_entry() -> None:
    # the registries as rlcockpit alone fills them (a fresh process: other tests register their own detectors)
    out = subprocess.run([sys.executable, "-c", BUILT_IN], capture_output=True, text=True, check=True, timeout=120)
    built_in = json.loads(out.stdout)
    assert len(built_in["detectors"]) >= 30 and len(built_in["stories"]) >= 9
    zh = catalogue("zh")
    for name, cause in built_in["detectors"].items():
        entry = zh["detectors"].get(name)
        assert entry and CJK.search(entry["label"]) and entry["titles"], f"detector {name!r} has no zh entry"
        if cause:
            assert CJK.search(entry.get("cause") or ""), f"detector {name!r}: its cause has no zh text"
    for name in built_in["stories"]:
        story = zh["stories"].get(name)
        assert story and CJK.search(story["title"]) and "{because}" in story["explain"], f"story {name!r}"


def _action_titles() -> set[str]:
    """The title of every ``make_action(view, TITLE, ...)`` in rlcockpit/health, placeholders as ``{}``."""
    out = set()
    for path in HEALTH.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            func = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(func, "id", getattr(func, "attr", "")) == "make_action":
                arg = node.args[1]
                if isinstance(arg, ast.Constant):
                    out.add(arg.value)
                elif isinstance(arg, ast.JoinedStr):
                    out.add("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in arg.values))
    return out


def test_every_action_title_in_the_health_engine_has_a_chinese_entry() -> None:
    titles = _action_titles()
    assert len(titles) >= 25  # the walk found them (not an empty set passing by default)
    shapes = {template_shape(k) for k in catalogue("zh")["texts"]}
    assert not sorted(titles - shapes), "action titles without a zh entry in ui/i18n/diagnosis_zh.yaml"


@pytest.mark.parametrize("kind", FAILURES)
def test_a_diagnosed_failure_reads_chinese_with_its_numbers_and_keys_intact(kind: str) -> None:
    trace = make_trace(kind, seed=0)
    findings = replay(HealthMonitor(None, trace.config), dict(trace.metrics), trace.samples)
    en = clean_json(diagnose_findings(findings, trace.config))
    zh = localize_diagnosis(en, "zh")
    assert zh["findings"] and len(zh["findings"]) == len(en["findings"])
    for f_en, f in zip(en["findings"], zh["findings"]):
        assert CJK.search(f["title"]), f["title"]
        assert f["title_en"] == f_en["title"]
        for text in [c["title"] for c in f["causes"]] + [a["title"] for a in f["actions"]]:
            assert CJK.search(text), f"{f['detector']}: untranslated {text!r}"
        assert [a["overrides"] for a in f["actions"]] == [a["overrides"] for a in f_en["actions"]]
        assert (f["metric"], f["step"], f["evidence"]) == (f_en["metric"], f_en["step"], f_en["evidence"])
        if f["metric"] and f["detector"] in ("rollout_mismatch", "reward_variance_collapse", "nonfinite"):
            assert f["metric"] in f["title"]
    rc = zh["root_cause"]
    if rc is not None:
        assert CJK.search(rc["title"]) and str(rc["step"]) in rc["title"] and CJK.search(rc["explanation"])
        for link in rc["chain"]:
            assert CJK.search(link["text"]), link["text"]
    assert zh["overrides"] == en["overrides"]


def test_the_numbers_of_a_kl_spike_are_the_findings_own() -> None:
    trace = make_trace("collapse", seed=0)
    findings = replay(HealthMonitor(None, trace.config), dict(trace.metrics), trace.samples)
    zh = localize_diagnosis(clean_json(diagnose_findings(findings, trace.config)), "zh")
    spike = next(f for f in zh["findings"] if f["detector"] == "kl_spike")
    v = spike["evidence"]["values"]
    assert spike["title"] == f"KL 突增至 {v['kl']:.3g}，是此前水平 {v['kl_before']:.3g} 的 {v['ratio']:.1f} 倍"
    cause = next(c["title"] for c in spike["causes"] if "kl_coef" in c["title"])
    assert cause == "kl_coef=0.001 远低于常用的 0.01-0.1"


def test_what_has_no_entry_stays_english_never_blank() -> None:
    finding = {"detector": "my_own_detector", "severity": "warning", "step": 7, "step_start": 7, "title": "Mine fired",
               "summary": "Why it matters", "causes": [{"title": "some cause", "score": 0.5, "evidence": ""}],
               "actions": [{"title": "Do a thing", "overrides": ["a.b=1"]}], "evidence": {"values": {}}}
    zh = localize_diagnosis({"findings": [finding], "root_cause": None}, "zh")["findings"][0]
    assert (zh["title"], zh["summary"], zh["causes"][0]["title"], zh["actions"][0]["title"]) == (
        "Mine fired", "Why it matters", "some cause", "Do a thing")
    # a registered detector whose template placeholders are missing still gets its label and step
    bare = {"detector": "kl_spike", "severity": "warning", "step": 9, "step_start": 9, "title": "KL spiked",
            "evidence": {"values": {"kl": "nan"}}}
    assert localize_diagnosis({"findings": [bare]}, "zh")["findings"][0]["title"] == "KL 突增（第 9 步）"
    assert translate_text("Lower the learning rate 5x and warm up over 10% of the steps", "zh") == (
        "把学习率降低到 1/5，并在前 10% 的步数内预热")
    assert localize_diagnosis({"findings": [finding]}, "en")["findings"][0]["title"] == "Mine fired"
