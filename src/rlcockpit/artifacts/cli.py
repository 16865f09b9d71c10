"""``rlcockpit artifact ls|get|rm|gc|alias``: versioned files in the store, from the shell."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("artifact", help="list, download, delete and clean up versioned artifacts",
                              description="Artifacts are versioned files (name:vN, aliases such as latest/best) "
                                          "logged with run.log_artifact; see docs/sweeps.md.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", help="store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")

    ls = sub.add_parser("ls", parents=[common], help="list versions (newest last)")
    ls.add_argument("name", nargs="?", help="only this artifact name")
    ls.add_argument("--project")
    ls.add_argument("--type")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_ls)

    get = sub.add_parser("get", parents=[common], help="download a version (policy:v3, policy:best, project/policy:latest)")
    get.add_argument("ref")
    get.add_argument("--root", help="target directory (default ./artifacts/NAME:vN)")
    get.add_argument("--project", help="project to look in first")
    get.add_argument("--json", action="store_true", help="print the version's details (files, lineage) as JSON")
    get.set_defaults(func=_get)

    rm = sub.add_parser("rm", parents=[common], help="delete a version (refused while it has an alias, unless --force)")
    rm.add_argument("ref")
    rm.add_argument("--project")
    rm.add_argument("--force", action="store_true", help="delete even with aliases (latest moves back)")
    rm.set_defaults(func=_rm)

    gc = sub.add_parser("gc", parents=[common], help="free stored files no version references (never a version with an alias)")
    gc.add_argument("--keep", type=int, help="also delete versions without aliases beyond the newest KEEP per name")
    gc.add_argument("--project")
    gc.add_argument("--name")
    gc.add_argument("--grace-s", type=float, default=600.0,
                    help="leave files younger than this alone (a version may be being logged); default 600")
    gc.add_argument("--dry-run", action="store_true")
    gc.set_defaults(func=_gc)

    al = sub.add_parser("alias", parents=[common], help="point an alias at a version (moved atomically), or --remove it")
    al.add_argument("ref")
    al.add_argument("alias")
    al.add_argument("--project")
    al.add_argument("--remove", action="store_true")
    al.set_defaults(func=_alias)


def _registry(args: argparse.Namespace) -> Any:
    from rlcockpit.store.artifacts import ArtifactRegistry

    return ArtifactRegistry(args.dir)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _ls(args: argparse.Namespace) -> int:
    versions = _registry(args).versions(args.project, args.name, args.type)
    if args.json:
        print(json.dumps([v.to_dict() for v in versions], indent=1))
        return 0
    if not versions:
        print("no artifacts" + (f" named {args.name!r}" if args.name else ""))
        return 0
    for v in versions:
        step = "" if v.step is None else f"step {v.step}"
        print(f"{v.project}/{v.qualified_name:<28} {v.type:<10} {_size(v.size):>9} {v.n_files:>4} files  "
              f"{step:<10} run {v.producer_run or '-':<10} {', '.join(v.aliases)}")
    return 0


def _get(args: argparse.Namespace) -> int:
    reg = _registry(args)
    v = reg.resolve(args.ref, project=args.project)
    if args.json:
        print(json.dumps({**v.to_dict(), "files": v.files(), "used_by": v.used_by()}, indent=1))
        return 0
    path = v.download(args.root)
    print(f"{v.project}/{v.qualified_name} ({', '.join(v.aliases) or 'no aliases'}): {v.n_files} files, "
          f"{_size(v.size)} -> {path}")
    return 0


def _rm(args: argparse.Namespace) -> int:
    reg = _registry(args)
    v = reg.resolve(args.ref, project=args.project)
    reg.delete(v, force=args.force)
    print(f"deleted {v.project}/{v.qualified_name}; `rlcockpit artifact gc` frees its files")
    return 0


def _gc(args: argparse.Namespace) -> int:
    if args.keep is not None and args.keep < 1:
        raise ValueError("--keep must be >= 1")
    out = _registry(args).gc(keep=args.keep, project=args.project, name=args.name, grace_s=args.grace_s,
                             dry_run=args.dry_run)
    verb = "would free" if args.dry_run else "freed"
    if out["deleted_versions"]:
        print(("would delete " if args.dry_run else "deleted ") + ", ".join(out["deleted_versions"]))
    print(f"{verb} {out['freed_files']} files ({_size(out['freed_bytes'])})")
    return 0


def _alias(args: argparse.Namespace) -> int:
    reg = _registry(args)
    v = reg.resolve(args.ref, project=args.project)
    if args.remove:
        reg.remove_alias(v, args.alias)
        print(f"removed alias {args.alias!r} from {v.project}/{v.qualified_name}")
    else:
        reg.set_alias(v, args.alias)
        print(f"{v.project}/{v.name}:{args.alias} -> {v.qualified_name}")
    return 0
