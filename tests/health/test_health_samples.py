"""Sample analysis on hand-made samples: repetition in Chinese and English, char runs, empty, non-printable."""

from __future__ import annotations

import pytest

from rlcockpit.health import HealthMonitor, analyze_samples
from rlcockpit.health.samples import longest_repeat_run, repeat_ngram_rate, units


def test_units_split_cjk_characters_and_words():
    assert units("答案是 42 ok") == ["答", "案", "是", "42", "ok"]


@pytest.mark.parametrize("text,expected", [("aaaaa", 5), ("这个这个这个", 3), ("the the the the end", 4),
                                           ("量子纠缠是一种现象。", 0), ("ab", 0)])
def test_longest_repeat_run(text, expected):
    assert longest_repeat_run(text) == expected


def test_repetition_rate_separates_loops_from_normal_text():
    loop = units("这个这个问题这个问题这个问题这个问题这个问题")
    normal = units("量子纠缠是一种量子力学现象，两个粒子的状态相互关联。")
    assert repeat_ngram_rate(loop) > 0.5
    assert repeat_ngram_rate(normal) < 0.1


def test_analyze_samples_metrics_on_hand_made_rows():
    rows = [
        {"prompt": "p1", "response": "这个这个这个这个这个这个这个这个", "reward": 0.0},
        {"prompt": "p2", "response": "aaaaa bbbbb ccccc aaaaa bbbbb ccccc aaaaa bbbbb ccccc", "reward": 0.0},
        {"prompt": "p3", "response": "", "reward": 0.0},
        {"prompt": "p4", "response": "ok\x00\x01\ufffd", "reward": 1.0, "finish_reason": "length"},
    ]
    metrics, excerpts = analyze_samples(rows, max_response_length=16)
    assert metrics["samples/empty_rate"] == pytest.approx(0.25)
    assert metrics["samples/longest_repeat_run"] >= 16 / 2  # "这个" x 8
    assert metrics["samples/repeat_ngram_rate"] > 0.3
    assert metrics["samples/nonprintable_rate"] == pytest.approx(3 / (16 + 53 + 5))
    assert metrics["samples/at_limit_rate"] == pytest.approx(2 / 4)  # row 1 reaches 16 units, row 4 is flagged
    assert 0 < metrics["samples/distinct_1"] < 0.5
    assert excerpts and excerpts[0]["response"].startswith(("这个", "aaaaa"))


def test_healthy_samples_are_clean():
    rows = [{"prompt": f"{a}+1", "response": f"首先计算 {a} 加 1，结果是 {a + 1}。The answer is {a + 1}.", "reward": 1.0}
            for a in range(8)]
    metrics, _ = analyze_samples(rows)
    assert metrics["samples/repeat_ngram_rate"] < 0.05
    assert metrics["samples/empty_rate"] == 0 and metrics["samples/nonprintable_rate"] == 0
    assert "samples/at_limit_rate" not in metrics  # no limit and no truncation flags: unknown, not 0


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="sample row 1"):
        analyze_samples([{"response": "x"}, "not a dict"])


def test_observe_samples_returns_metrics_and_degeneration_findings_with_excerpts():
    mon = HealthMonitor()
    good = [{"prompt": f"q{i}", "response": f"The answer is {i}. 答案是 {i}。", "reward": 1.0} for i in range(8)]
    bad = [{"prompt": f"q{i}", "response": "这个这个问题这个问题这个问题这个问题<script>alert(1)</script>", "reward": 0.0}
           for i in range(8)]
    metrics, found = mon.observe_samples(0, good)
    assert metrics["samples/repeat_ngram_rate"] < 0.05 and found == []
    mon.observe(0, {"critic/score/mean": 0.8, **metrics})  # the tracking layer logs them back: no double count
    metrics, found = mon.observe_samples(10, bad)
    assert [f.detector for f in found] == ["sample_degeneration"] and found[0].severity == "critical"
    assert "这个这个" in found[0].evidence["samples"][0]["response"]
