"""scripts/share_venv_files.py: the side venvs share identical files with the main venv through hard links,
and a later change to one venv's package (pip unlinks and writes anew) never reaches the other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "share_venv_files.py"


def _venv(base: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = base / "lib/python3.11/site-packages" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return base


def test_identical_files_are_linked_and_the_rest_stays_separate(tmp_path: Path) -> None:
    main = _venv(tmp_path / "main", {"torch/lib/libtorch.so": b"x" * 5000, "torch/__init__.py": b"import a\n",
                                     "numpy/core.py": b"v1\n", "only_main.py": b"m\n",
                                     "torch/__pycache__/__init__.cpython-311.pyc": b"/main/torch/__init__.py"})
    side = _venv(tmp_path / "side", {"torch/lib/libtorch.so": b"x" * 5000, "torch/__init__.py": b"import a\n",
                                     "numpy/core.py": b"v2\n", "only_side.py": b"s\n",
                                     "torch/__pycache__/__init__.cpython-311.pyc": b"/side/torch/__init__.py"})
    out = subprocess.run([sys.executable, str(SCRIPT), str(side), str(main)], capture_output=True, text=True,
                         check=True).stdout
    assert "2 files" in out, out
    sp_main, sp_side = main / "lib/python3.11/site-packages", side / "lib/python3.11/site-packages"

    def same(rel: str) -> bool:
        return (sp_main / rel).stat().st_ino == (sp_side / rel).stat().st_ino

    assert same("torch/lib/libtorch.so") and same("torch/__init__.py")
    assert not same("numpy/core.py") and not same("torch/__pycache__/__init__.cpython-311.pyc")
    assert (sp_side / "numpy/core.py").read_bytes() == b"v2\n"
    # pip replaces a file by unlinking it and writing a new one: the other venv keeps its bytes
    (sp_main / "torch/__init__.py").unlink()
    (sp_main / "torch/__init__.py").write_bytes(b"import b\n")
    assert (sp_side / "torch/__init__.py").read_bytes() == b"import a\n"
    assert not list(sp_side.rglob("*.share-tmp"))


def test_a_missing_venv_is_not_an_error(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "nope"), str(tmp_path / "none")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "nothing to share" in out.stdout
