"""Sample analysis on hand-made samples: repetition in Chinese and English, char runs, empty, non-printable."""

from __future__ import annotations

import pytest

from rlcockpit.health import HealthMonitor, analyze_samples
from rlcockpit.health.samples import char_run_share, longest_repeat_run, repeat_ngram_rate, units


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


# -- short responses: too short for repeated 3-grams, degenerate all the same ---------------------------------

def _arith_batch(answers_by_prompt: dict[str, list[str]]) -> list[dict]:
    return [{"prompt": p, "response": r, "reward": 1.0} for p, rs in answers_by_prompt.items() for r in rs]


@pytest.mark.parametrize("text,share", [("aaaaaaaa", 1.0), ("1111<eos>", 1.0), ("0000</s>", 1.0), ("7777<|im_end|>", 1.0),
                                        ("052", 0.0), ("117", 0.0), ("1000", 0.0), ("10000", 0.8), ("", 0.0)])
def test_char_run_share_ignores_special_tokens_and_short_runs(text, share):
    assert char_run_share(text) == pytest.approx(share)


def test_short_degenerate_batch_is_measured_and_healthy_short_answers_are_not():
    healthy = _arith_batch({f"{a} + {b} = ?": [f"{a + b:03d}"] * 6 + [f"{a + b + 1:03d}"] * 2
                            for a, b in [(23, 29), (58, 59), (40, 80), (91, 8)]})
    metrics, _ = analyze_samples(healthy)
    assert metrics["samples/char_run_rate"] == 0.0
    # every group converged on its own answer: identical within a prompt, different across prompts
    assert metrics["samples/cross_prompt_duplicate_rate"] == pytest.approx(1 / 4)
    degenerate = _arith_batch({f"{a} + 1 = ?": ["aaaaaaaa", "1111<eos>", "0000", "052"] for a in range(5)})
    metrics, excerpts = analyze_samples(degenerate)
    assert metrics["samples/char_run_rate"] == pytest.approx(3 / 4)
    assert metrics["samples/cross_prompt_duplicate_rate"] == 1.0  # "052" is the answer to all 5 prompts
    assert excerpts[0]["response"] in ("aaaaaaaa", "1111<eos>", "0000")


def test_cross_prompt_duplicates_need_prompts_to_judge():
    metrics, _ = analyze_samples([{"response": "42"}] * 16)  # no prompts logged: one prompt x 16 would look the same
    assert "samples/cross_prompt_duplicate_rate" not in metrics
    metrics, _ = analyze_samples(_arith_batch({"a": ["1"], "b": ["1"], "c": ["1"]}))  # 3 prompts: too few
    assert "samples/cross_prompt_duplicate_rate" not in metrics


def _run_short_answer_monitor(later: list[dict]) -> list:
    mon = HealthMonitor()
    early = _arith_batch({f"{a} + {b} = ?": [f"{a + b:03d}", f"{a + b:03d}", f"{a + b - 1:03d}", f"{a + b:03d}"]
                          for a, b in [(12, 40), (33, 84), (70, 47), (9, 9), (61, 39), (52, 0)]})
    found = []
    for step, rows in [(0, early), (5, early), (10, later)]:
        metrics, f = mon.observe_samples(step, rows)
        found += f
        mon.observe(step, {"critic/score/mean": 0.5, **metrics})
    return found


@pytest.mark.parametrize("response", ["aaaaaaaa", "1111<eos>", "0000"])
def test_short_degenerate_responses_raise_a_critical_degeneration_finding(response):
    later = _arith_batch({f"{a} + {b} = ?": [response] * 4 for a, b in [(12, 40), (33, 84), (70, 47), (9, 9), (61, 39)]})
    found = [f for f in _run_short_answer_monitor(later) if f.detector == "sample_degeneration"]
    assert [f.severity for f in found] == ["critical"] and found[0].step == 10
    assert "repeated character" in found[0].title and "same answer to different prompts" in found[0].title
    assert found[0].evidence["samples"][0]["response"] == response


def test_a_yes_no_task_is_judged_against_its_own_early_steps():
    mon = HealthMonitor()
    early = _arith_batch({f"is {i} even?": ["yes" if i % 3 else "no"] * 4 for i in range(8)})  # 5 of 8 "yes"
    late = _arith_batch({f"is {i} even?": ["yes" if i else "no"] * 4 for i in range(8)})  # 7 of 8 "yes"
    found = []
    for step, rows in [(0, early), (5, late)]:
        metrics, f = mon.observe_samples(step, rows)
        found += f
    assert metrics["samples/cross_prompt_duplicate_rate"] == pytest.approx(7 / 8) and found == []


def test_healthy_short_arithmetic_answers_raise_nothing():
    # converged groups ("052" x 4), answers with zeros ("100", "1000", "10000" once) and a padded "000"
    later = _arith_batch({"26 + 26 = ?": ["052"] * 4, "58 + 59 = ?": ["117"] * 4, "50 + 50 = ?": ["100"] * 4,
                          "999 + 1 = ?": ["1000"] * 4, "9999 + 1 = ?": ["10000", "10001", "10000", "9999"],
                          "5 - 5 = ?": ["000"] * 4})
    assert _run_short_answer_monitor(later) == []


def test_vision_prompts_are_told_apart_by_their_images():
    # issue 28: one question text about different pictures; the policy answers "3" whatever the image shows
    def ref(i: int) -> dict:
        return {"_type": "image-file", "sha256": f"{i:064x}", "width": 56, "height": 56, "format": "png"}

    rows = [{"prompt": "<image>How many circles?", "response": "3", "reward": float(k == 0), "images": [ref(i)]}
            for i in range(5) for k in range(2)]
    metrics, excerpts = analyze_samples(rows)
    assert metrics["samples/cross_prompt_duplicate_rate"] == 1.0  # the same answer to every picture
    assert metrics["samples/zero_std_group_rate"] == 0.0  # five groups of two, not one group of ten
    assert excerpts[0]["prompt"] == "<image>How many circles?"
    assert excerpts[0]["images"][0]["sha256"] == rows[excerpts[0]["idx"]]["images"][0]["sha256"]  # cited
