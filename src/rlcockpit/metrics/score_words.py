"""What a logged series is, by the words of its name: a verdict on the answer (accuracy, correct, pass@k) or a
format / length part of the reward. Any naming is read (TRL's ``rewards/accuracy/mean``, a verifier's
``is_correct``, OpenRLHF's ``eval_<set>_pass1``, Tinker's ``env/all/correct``, Unsloth's
``soft_format_reward_func``), so it lives beside the alias table, on the ground floor: the reward and the policy
detectors both read it."""

from __future__ import annotations

import re

# A verdict on the answer, which a hacked reward leaves behind. (A series named for a length, a spread or an
# optimiser quantity is not a score whatever its words: the reward detectors' NOT_A_SCORE.)
CORRECTNESS_WORDS = frozenset({"correct", "correctness", "accuracy", "acc", "exact", "em", "solved", "solve",
                               "success", "pass", "is_correct"})
FORMAT_WORDS = frozenset({"format", "xml", "xmlcount", "json", "length", "len", "style", "tag", "tags", "int",
                          "strict", "soft", "count", "overlong"})


def is_format(key: str) -> bool:
    """Whether ``key`` names a format or length part of the reward (Unsloth's soft/strict_format_reward_func,
    xmlcount_reward_func, int_reward_func; a valid_json reward; an overlong penalty), not a verdict on the task."""
    return any(w in FORMAT_WORDS for w in re.split(r"[^a-z0-9]+", key.lower()) if w)


def is_correctness(key: str) -> bool:
    """Whether ``key`` names a correctness measure (accuracy, correct, pass@k, exact match, solved...)."""
    words = [w for w in re.split(r"[^a-z0-9]+", key.lower()) if w]
    return any(w in CORRECTNESS_WORDS or (w.startswith("pass") and w[4:].isdigit()) for w in words)
