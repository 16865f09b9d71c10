"""``rlcockpit explain``: what a metric means, its healthy range and what to change.

Imports the guide inside the handler so that ``rlcockpit --help`` does not load the data files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``explain KEY... [--lang en|zh] [--json]`` and ``explain --list`` to the ``rlcockpit`` parser."""
    p = subparsers.add_parser(
        "explain",
        help="explain a metric: meaning, healthy range, what to change (English or Chinese)",
        description=(
            "Explain RL training metrics. Accepts verl keys (actor/entropy), seed-style and TRL names "
            "(train/kl_div, kl), and keys with variable parts (val-core/gsm8k/acc/mean@1, system/gpu/3/utilization)."
        ),
    )
    p.add_argument("keys", nargs="*", metavar="KEY", help="metric key(s), canonical or alias")
    p.add_argument(
        "--lang",
        choices=("en", "zh"),
        default=os.environ.get("RLCOCKPIT_LANG", "en")
        if os.environ.get("RLCOCKPIT_LANG") in ("en", "zh")
        else "en",
        help="language of the texts (default: $RLCOCKPIT_LANG or en)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--list", action="store_true", help="list every canonical key with its title")
    p.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    """Exit code 0 when every key is known, 1 when one is unknown (its suggestions are printed), 2 on misuse."""
    try:
        return _explain(args)
    except BrokenPipeError:  # `rlcockpit explain --list | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at interpreter exit
        return 0


def _explain(args: argparse.Namespace) -> int:
    from rlcockpit.metrics.guide import all_entries, entry_as_dict, explain, match, suggest

    if args.list:
        entries = all_entries()
        if args.json:
            print(
                json.dumps(
                    [
                        {"key": e.key, "title": e.text("title", args.lang), "category": e.category}
                        for e in entries
                    ],
                    ensure_ascii=False,
                    indent=2,
                )
            )
        else:
            width = max(len(e.key) for e in entries)
            category = None
            for e in entries:
                if e.category != category:
                    category = e.category
                    print(f"\n[{category}]")
                print(f"  {e.key:<{width}}  {e.text('title', args.lang)}")
        return 0
    if not args.keys:
        print("rlcockpit explain: give a metric KEY, or --list to see all keys")
        return 2
    status = 0
    docs: list[dict[str, Any]] = []
    for i, key in enumerate(args.keys):
        found = match(key)
        if found is None:
            status = 1
        if args.json:
            if found is None:
                docs.append({"key": key, "known": False, "suggestions": suggest(key)})
            else:
                doc = {"key": key, "known": True, "canonical": found.canonical, "matched_via": found.via}
                doc["parts"] = dict(found.parts)
                doc["entry"] = entry_as_dict(found.info, args.lang)
                docs.append(doc)
        else:
            if i:
                print()
            print(explain(key, args.lang))
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else docs, ensure_ascii=False, indent=2))
    return status
