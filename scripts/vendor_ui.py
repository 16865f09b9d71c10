"""Re-vendor the dashboard's JavaScript libraries from npm (maintainers only; users never run this).

For each entry of ``src/rlcockpit/ui/static/vendor/vendor.json``: ``npm pack <name>@<version>``, check the
tarball against the ``integrity`` recorded there (npm's published ``dist.integrity``; confirm a new one
with ``npm view <name>@<version> dist.integrity``), copy the listed files into ``static/vendor/`` and keep
the tarball in ``tests/ui/data/`` so ``tests/ui/test_ui_vendor.py`` can re-check everything offline.

    python scripts/vendor_ui.py            # after editing version + integrity in vendor.json
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "src" / "rlcockpit" / "ui" / "static" / "vendor"
TARBALLS = ROOT / "tests" / "ui" / "data"


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def main() -> int:
    manifest = json.loads((VENDOR / "vendor.json").read_text())
    for name, spec in manifest.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(["npm", "pack", f"{name}@{spec['version']}", "--silent"], cwd=tmp, check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
            data = (Path(tmp) / out).read_bytes()
        if sri(data) != spec["integrity"]:
            print(f"{name}@{spec['version']}: tarball integrity {sri(data)} != recorded {spec['integrity']}")
            return 1
        TARBALLS.mkdir(parents=True, exist_ok=True)
        (TARBALLS / f"{name}-{spec['version']}.tgz").write_bytes(data)
        with tarfile.open(TARBALLS / f"{name}-{spec['version']}.tgz") as tar:
            for member, dest in spec["files"].items():
                target = VENDOR / dest
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
        print(f"{name}@{spec['version']}: vendored {len(spec['files'])} files (integrity ok)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
