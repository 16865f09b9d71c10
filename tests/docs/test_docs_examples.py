"""The user docs must describe what exists: commands and flags, runnable examples, links between pages.

* Every ``rlcockpit <command> --flag`` written in a ``bash`` block must be a real command and flag.
* Python blocks preceded by ``<!-- test: run -->`` are run, in page order, against a fresh store.
* Every relative link ``[text](page.md#anchor)`` must name an existing page and heading.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(DOCS.glob("*.md"))
RUN_MARK = "<!-- test: run -->"
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def code_blocks(text: str, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(text) if kind == lang]


def subcommand_options() -> dict[str, set[str]]:
    from rlcockpit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    def options(p: argparse.ArgumentParser) -> set[str]:  # nested actions (`artifact ls --project`) count too
        out = {opt for action in p._actions for opt in action.option_strings}
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    out |= options(child)
        return out

    return {name: options(p) for name, p in sub.choices.items()}


def cli_invocations(text: str) -> list[tuple[str, str]]:
    """``(line, rest after 'rlcockpit')`` for every command line in the page's bash blocks."""
    out = []
    for block in code_blocks(text, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" # ")[0].strip()
            for m in re.finditer(r"(?:^|\s|/)rlcockpit ([^|;&]*)", line):
                out.append((line, m.group(1)))
    return out


def test_pages_exist() -> None:
    names = {p.name for p in PAGES}
    for expected in ("README.md", "tracking.md", "metrics.md", "metrics-reference.md", "health.md",
                     "detectors-reference.md", "ui.md", "integrations.md", "trainer.md", "config-reference.md",
                     "alerts.md", "preflight.md"):
        assert expected in names, expected


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_commands_and_flags_exist(page: Path) -> None:
    options = subcommand_options()
    for line, rest in cli_invocations(page.read_text(encoding="utf-8")):
        tokens = rest.split()
        if not tokens:
            continue
        command = tokens[0]
        assert command in options, f"{page.name}: unknown command in {line!r}"
        for tok in tokens[1:]:
            flag = tok.split("=", 1)[0]
            if flag.startswith("-") and flag != "-" and not re.fullmatch(r"-\d.*", flag):
                assert flag in options[command], f"{page.name}: {command} has no option {flag} ({line!r})"


def _slug(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_relative_links_resolve() -> None:
    anchors = {p.name: {_slug(h) for h in re.findall(r"^#+ (.+)$", p.read_text(encoding="utf-8"), flags=re.M)}
               for p in PAGES}
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target:
                continue
            path, _, anchor = target.partition("#")
            name = path or page.name
            if path.startswith("../") or "/" in path or (path and not path.endswith(".md")):  # other files, docs/qa/*.md
                assert (DOCS / path).exists(), f"{page.name}: broken link {target}"
                continue
            assert name in anchors, f"{page.name}: link to missing page {target}"
            if anchor:
                assert anchor in anchors[name], f"{page.name}: link to missing heading {target}"


RUNNABLE = [p for p in PAGES if RUN_MARK in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_marked_python_examples_run(page: Path, tmp_path: Path) -> None:
    text = page.read_text(encoding="utf-8")
    snippets = [m.group(1) for m in re.finditer(re.escape(RUN_MARK) + r"\s*```python\n(.*?)```", text, re.S)]
    assert snippets, f"{page.name}: {RUN_MARK} must precede a python block"
    # a run example writes under its working folder: an absolute /tmp path outlives the test (sweeps.md's download
    # to /tmp/policy was left behind by every `make test`)
    assert not [s for s in snippets if re.search(r"""["']/tmp/""", s)], f"{page.name}: an example writes to /tmp"
    driver = tmp_path / "run_examples.py"
    body = "\n".join(f"print('--- example {i}', flush=True)\nexec(compile({s!r}, 'example {i}', 'exec'), {{}})"
                     for i, s in enumerate(snippets))
    driver.write_text(textwrap.dedent(body), encoding="utf-8")
    env = {**os.environ, "RLCOCKPIT_DIR": str(tmp_path / "store"), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    proc = subprocess.run([sys.executable, str(driver)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout.count("--- example") == len(snippets)
