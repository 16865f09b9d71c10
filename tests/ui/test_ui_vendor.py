"""The vendored chart library is exactly the npm release it claims to be (offline check).

``vendor.json`` records npm's published ``dist.integrity`` (sha512 of the release tarball); the tarball is
kept in ``tests/ui/data``. The test checks the tarball against that hash, then every vendored file
byte for byte against the file inside the tarball, and that the page loads the vendored copy.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tarfile
from pathlib import Path

from rlcockpit.ui.app import STATIC_DIR

DATA = Path(__file__).resolve().parent / "data"
MANIFEST = json.loads((STATIC_DIR / "vendor" / "vendor.json").read_text())


def test_uplot_tarball_matches_published_integrity_and_files_match_tarball() -> None:
    spec = MANIFEST["uplot"]
    assert spec["version"] == "1.6.32"
    # npm view uplot@1.6.32 dist.integrity
    assert spec["integrity"] == "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
    tarball = (DATA / f"uplot-{spec['version']}.tgz").read_bytes()
    assert "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode() == spec["integrity"]
    with tarfile.open(DATA / f"uplot-{spec['version']}.tgz") as tar:
        for member, dest in spec["files"].items():
            assert (STATIC_DIR / "vendor" / dest).read_bytes() == tar.extractfile(member).read(), dest
        pkg = json.loads(tar.extractfile("package/package.json").read())
    assert pkg["name"] == "uplot" and pkg["version"] == spec["version"] and pkg["license"] == spec["license"]
    assert "MIT License" in (STATIC_DIR / "vendor" / "uplot" / "LICENSE").read_text()


def test_page_loads_the_vendored_copy_only() -> None:
    html = (STATIC_DIR / "index.html").read_text()
    assert '<script src="/static/vendor/uplot/uPlot.iife.min.js"></script>' in html
    assert "http://" not in html and "https://" not in html  # no CDN
