"""Server-side data shaping for the dashboard (pure functions, no server)."""

from __future__ import annotations

import numpy as np

from rlcockpit.ui import analysis


def test_repeated_spans_mark_loops_not_normal_text() -> None:
    text = "Let me see. the answer is the answer is the answer is 4"
    spans = analysis.repeated_spans(text)
    assert spans and text[spans[0][0]:spans[0][1]].startswith("the answer is")
    assert analysis.repeated_spans("A perfectly ordinary sentence with no loops at all.") == []
    cjk = "答案是这个这个这个这个"
    assert analysis.repeated_spans(cjk)  # character-level run without spaces
    assert analysis.repeated_spans("!!!!!!!!")
    assert analysis.repeated_spans(None) == [] and analysis.repeated_spans("") == []


def test_group_keys_follow_panel_order() -> None:
    """verl's usual sections first, then every other prefix as its own section, keys without one last."""
    groups = analysis.group_keys(["system/cpu", "zeta/x", "critic/score/mean", "actor/kl_loss", "perf/mfu",
                                  "data/val_prompts", "loss"])
    assert [g["group"] for g in groups] == ["actor", "critic", "perf", "system", "data", "zeta", "other"]


def test_config_diff_flags_only_differences() -> None:
    rows = {r["key"]: r for r in analysis.config_diff([
        {"actor": {"optim": {"lr": 1e-6}}, "rollout": {"n": 8}},
        {"actor": {"optim": {"lr": 5e-6}}, "rollout": {"n": 8}, "extra": True},
    ])}
    assert rows["actor.optim.lr"]["differs"] and not rows["rollout.n"]["differs"]
    assert rows["extra"]["values"] == [None, True] and rows["extra"]["differs"]


def test_xy_path_joins_on_step_and_thins() -> None:
    steps = np.arange(1000)
    path = analysis.xy_path((steps, steps * 0.01), (steps[::2], np.ones(500)), max_points=50)
    assert len(path["x"]) <= 51 and path["steps"][-1] == 998  # the end of the path is kept
    assert all(s % 2 == 0 for s in path["steps"])


def test_series_payload_formats_agree() -> None:
    import base64

    steps = np.array([1, 2, 3])
    vals = np.array([0.5, np.nan, -np.inf])
    ts = np.array([10.0, 11.0, 12.0])
    js = analysis.series_payload(steps, vals, ts)
    b = analysis.series_payload(steps, vals, ts, binary=True)
    assert js["values"] == [0.5, None, None] and js["nonfinite"] == b["nonfinite"] == [[2, "nan"], [3, "-inf"]]
    decoded = np.frombuffer(base64.b64decode(b["values_b64"]), "<f8")
    assert decoded[0] == 0.5 and np.isnan(decoded[1]) and b["n"] == 3


def test_key_metrics_use_aliases() -> None:
    m = analysis.key_metrics({"objective/kl": 0.3, "critic/score/mean": 0.9, "actor/entropy": float("nan")})
    assert m["kl"] == 0.3 and m["reward"] == 0.9 and m["resp_len"] is None
