"""verl's geo3k reward (``verl.utils.reward_score.geo3k``), for ``data_source == "hiyouga/geometry3k"``.

Why the same library: a verl user's Geometry3k parquet must get the rewards it gets in verl, and verl grades
with ``mathruler`` (the boxed answer, compared by ``grade_answer``: numbers, fractions and LaTeX that mean the
same value match). The score is ``0.9 * accuracy + 0.1 * format``, where the format asks for
``<think>...</think>`` then a ``\\boxed{...}`` answer, as verl's ``compute_score`` defaults give.
"""

from __future__ import annotations

import re

GEO3K_SOURCES = ("hiyouga/geometry3k",)
_FORMAT = re.compile(r"<think>.*</think>.*\\boxed\{.*\}.*", re.DOTALL)


def format_reward(predict_str: str) -> float:
    return 1.0 if _FORMAT.fullmatch(predict_str) else 0.0


def acc_reward(predict_str: str, ground_truth: str, use_boxed: bool = True) -> float:
    from mathruler.grader import extract_boxed_content, grade_answer

    answer = extract_boxed_content(predict_str) if use_boxed else predict_str
    return 1.0 if grade_answer(answer, ground_truth) else 0.0


def geo3k_score(predict_str: str, ground_truth: str, use_boxed: bool = True, format_score: float = 0.1) -> float:
    """verl's ``geo3k.compute_score``."""
    return (1.0 - format_score) * acc_reward(predict_str, str(ground_truth), use_boxed) + \
        format_score * format_reward(predict_str)
