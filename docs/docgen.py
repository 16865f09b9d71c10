"""Shared command line of the reference-page generators (``docs/gen_*.py``): write the page, or ``--check``
that the committed page is what the generator prints now (exit 1 when stale)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def generator_main(render: Callable[[], str], output: Path, script: str, argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{output} is stale: run python docs/{Path(script).name}", file=sys.stderr)
            return 1
        return 0
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0
