"""verl's default rule rewards, chosen by ``data_source`` as ``verl.utils.reward_score.default_compute_score``.

A verl user's GSM8K or MATH parquet must train here with the rewards it gets in verl, so the answer
extraction follows verl's rules exactly (including their quirks: the strict GSM8K pattern wants a space
after ``####``; only the last 300 characters are searched; ``math_dapo`` scores -1 for a wrong answer):

* ``openai/gsm8k``: the number after the last ``#### `` (commas dropped) must equal the ground truth
  string: 1.0, else 0.0;
* ``lighteval/MATH``, ``DigitalLearningGmbH/MATH-lighteval``, ``HuggingFaceH4/MATH-500``: the last
  ``\\boxed{...}`` (or ``\\fbox``), normalised with the Hendrycks MATH rules, must equal the normalised
  ground truth: 1.0, else 0.0;
* ``math_dapo``, ``math``, ``math_dapo_reasoning``, ``aime*``: the last ``Answer: ...`` line (Minerva
  normalisation), else the last ``\\boxed{}`` in the final 100 characters: ``{"score": 1.0 | -1.0, "acc",
  "pred"}``;
* ``hiyouga/geometry3k``: verl's geo3k reward (:mod:`rlcockpit.trainer.reward.geo3k`).

The normalisation tables are the published Minerva / lm-evaluation-harness rules, as verl uses them.
``tests/trainer/fixtures/verl_reward_cases.json`` holds verl's own results on a few hundred inputs
(generated in the verl venv by ``tests/trainer/fixtures/make_verl_reward_cases.py``) and the tests
require identical scores.
"""

from __future__ import annotations

import re
from typing import Any

from rlcockpit.trainer.reward.geo3k import GEO3K_SOURCES, geo3k_score

CLIP_CHARS = 300

GSM8K_SOURCES = ("openai/gsm8k",)
MATH_SOURCES = ("lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500")
DAPO_SOURCES = ("math_dapo", "math", "math_dapo_reasoning")


class NoDefaultReward(ValueError):
    """``reward.name=auto`` and the row's data source has no built-in reward."""


# --------------------------------------------------------------------------- GSM8K

_GSM8K_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_NUMBER = re.compile(r"(\-?[0-9\.\,]+)")


def gsm8k_answer(solution: str, method: str = "strict") -> str | None:
    """The final answer as verl's GSM8K scorer extracts it (``strict``: after ``#### ``; ``flexible``: the
    last number that is not just a dot)."""
    tail = solution[-CLIP_CHARS:]
    if method == "strict":
        found = _GSM8K_STRICT.findall(tail)
        return found[-1].replace(",", "").replace("$", "") if found else None
    if method != "flexible":
        raise ValueError(f"gsm8k method must be strict or flexible, got {method!r}")
    found = _NUMBER.findall(tail)
    if not found:
        return None
    usable = [n for n in found if n not in ("", ".")]
    return usable[-1] if usable else found[0]


def gsm8k_score(solution: str, ground_truth: Any, method: str = "strict", format_score: float = 0.0,
                score: float = 1.0) -> float:
    answer = gsm8k_answer(solution, method)
    if answer is None:
        return 0.0
    return float(score if answer == ground_truth else format_score)


# --------------------------------------------------------------------------- MATH (Hendrycks rules)

def _last_boxed(text: str, *, allow_space_form: bool = True, allow_fbox: bool = True) -> str | None:
    """The last ``\\boxed{...}`` with balanced braces (``\\boxed x`` and ``\\fbox{}`` forms as MATH's scorer)."""
    if allow_space_form and "\\boxed " in text:
        return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
    start = text.rfind("\\boxed" if allow_space_form else "\\boxed{")
    if start < 0 and allow_fbox:
        start = text.rfind("\\fbox")
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start: i + 1]
    return None


def _unbox(boxed: str) -> str:
    """Content of ``\\boxed{...}`` / ``\\boxed x``; anything else (``\\fbox``) is an error, as in verl."""
    if "\\boxed " in boxed:
        if not boxed.startswith("\\boxed "):
            raise ValueError(f"box error: {boxed}")
        return boxed[len("\\boxed "):]
    if not (boxed.startswith("\\boxed{") and boxed.endswith("}")):
        raise ValueError(f"box error: {boxed}")
    return boxed[len("\\boxed{"):-1]


def _fracs(text: str) -> str:
    """``\\frac12`` -> ``\\frac{1}{2}``, ``\\frac1{2}`` -> ``\\frac{1}{2}``; raises on a bare trailing ``\\frac``."""
    head, *rest = text.split("\\frac")
    out = [head]
    for part in rest:
        out.append("\\frac")
        if part[0] == "{":  # IndexError on "\\frac" at the very end: the caller falls back to raw equality
            out.append(part)
            continue
        if len(part) < 2:
            return text
        a, b, tail = part[0], part[1], part[2:]
        out.append("{" + a + "}{" + b + "}" + tail if b != "{" else "{" + a + "}" + b + tail)
    return "".join(out)


def _slash_fraction(text: str) -> str:
    pieces = text.split("/")
    if len(pieces) != 2:
        return text
    try:
        a, b = int(pieces[0]), int(pieces[1])
    except ValueError:
        return text
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def _sqrt_braces(text: str) -> str:
    if "\\sqrt" not in text:
        return text
    head, *rest = text.split("\\sqrt")
    out = [head]
    for part in rest:
        out.append("\\sqrt" + part if part[0] == "{" else "\\sqrt{" + part[0] + "}" + part[1:])
    return "".join(out)


# (old, new) replacements of the Hendrycks MATH normalisation, applied in this order
_MATH_REPLACE = (("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"), ("\\left", ""),
                 ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", ""))


def math_normalize(text: str) -> str:
    """Hendrycks MATH answer normalisation (raises where the reference implementation raises)."""
    for old, new in _MATH_REPLACE:
        text = text.replace(old, new)
    if "\\text{ " in text:  # units on the right
        pieces = text.split("\\text{ ")
        if len(pieces) != 2:
            raise ValueError("ambiguous units")
        text = pieces[0]
    text = text.replace("\\\\%", "").replace("\\%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "k = 5" -> "5"
        text = sides[1]
    text = _sqrt_braces(text).replace(" ", "")
    text = _fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _slash_fraction(text)


def math_equivalent(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return math_normalize(a) == math_normalize(b)
    except Exception:  # noqa: BLE001 - the reference compares the raw strings then
        return a == b


def math_score(solution: str, ground_truth: Any) -> float:
    try:
        boxed = _last_boxed(solution)
        if boxed is not None and math_equivalent(_unbox(boxed), ground_truth):
            return 1.0
    except Exception:  # noqa: BLE001 - a malformed box scores 0, as in verl
        return 0.0
    return 0.0


# --------------------------------------------------------------------------- math_dapo (Minerva rules)

_DAPO_REPLACE = (("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), (r"\ ", ""), (" ", ""), ("mbox", "text"),
                 (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"))
_DAPO_REMOVE = ("square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units", "\\ldots", "sue",
                "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals",
                "edges", "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}",
                "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", r"\mathrm{th}", r"^\circ", r"^{\circ}", r"\;",
                r",\!", "{,}", '"', "\\dots")
_DAPO_REGEX = ((r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$"), (r"(\\text\{)(.*?)(\})", "\\2"), (r"(\\textbf\{)(.*?)(\})", "\\2"),
               (r"(\\overline\{)(.*?)(\})", "\\2"), (r"(\\boxed\{)(.*)(\})", "\\2"),
               (r"(frac)([^{])(.)", "frac{\\2}{\\3}"), (r"(sqrt)([^{])", "sqrt{\\2}"))
_ANSWER_LINE = re.compile(r"(?i)Answer\s*:\s*([^\n]+)")
INVALID = "[INVALID]"


def minerva_normalize(answer: str) -> str:
    answer = answer.split("=")[-1]
    for old, new in _DAPO_REPLACE:
        answer = answer.replace(old, new)
    for expr in _DAPO_REMOVE:
        answer = answer.replace(expr, "")
    for pattern, repl in _DAPO_REGEX:
        answer = re.sub(pattern, repl, answer)
    answer = answer.replace("$", "")
    if answer.replace(",", "").isdigit():
        answer = answer.replace(",", "")
    return answer.strip()


def dapo_score(solution: str, ground_truth: str) -> dict[str, Any]:
    tail = solution[-CLIP_CHARS:]
    lines = _ANSWER_LINE.findall(tail)
    pred = minerva_normalize(lines[-1] if lines else INVALID)
    correct = pred == minerva_normalize(ground_truth)
    if pred == INVALID:
        boxed = _last_boxed(tail[-100:], allow_space_form=False, allow_fbox=False)
        if boxed is not None:
            pred = boxed[len("\\boxed{"):-1]
            correct = pred == ground_truth
    return {"score": 1.0 if correct else -1.0, "acc": bool(correct), "pred": pred}


# --------------------------------------------------------------------------- dispatch

def default_compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                          **kwargs: Any) -> float | dict[str, Any]:
    """The reward verl's ``default_compute_score`` gives this data source (plus rlcockpit's ``arith``)."""
    if data_source in GSM8K_SOURCES:
        return gsm8k_score(solution_str, ground_truth, **kwargs)
    if data_source in MATH_SOURCES:
        return math_score(solution_str, ground_truth)
    if data_source in DAPO_SOURCES or data_source.startswith("aime"):
        return dapo_score(solution_str, ground_truth)
    if data_source == "arith":
        return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0
    if data_source in GEO3K_SOURCES:
        return geo3k_score(solution_str, ground_truth)
    raise NoDefaultReward(f"no built-in reward for data_source {data_source!r} (built in: "
                          f"{', '.join(known_sources())}): set custom_reward_function.path, or reward.name")


def known_sources() -> list[str]:
    return [*GSM8K_SOURCES, *MATH_SOURCES, *DAPO_SOURCES, "aime*", "arith", *GEO3K_SOURCES]


def has_default(data_source: str) -> bool:
    return data_source in (*GSM8K_SOURCES, *MATH_SOURCES, *DAPO_SOURCES, "arith", *GEO3K_SOURCES) or data_source.startswith("aime")
