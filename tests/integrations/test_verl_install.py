"""install() guards: the verl version check and a clear error without verl (the real patching is tested
against the real verl package in test_verl_live.py)."""

from __future__ import annotations

import importlib.util

import pytest

from rlcockpit.integrations.verl import VerlVersionError, check_version, install


@pytest.mark.parametrize("version", ["0.4.0", "0.6.1", "0.9.1", "0.10.0.dev0"])
def test_supported_versions_pass(version):
    check_version(version)


@pytest.mark.parametrize("version", ["0.3.1", "1.0.0", "2.1"])
def test_unsupported_versions_fail_with_a_way_out(version):
    with pytest.raises(VerlVersionError, match=rf"found verl {version}.*rlcockpit watch --verl-file"):
        check_version(version)


@pytest.mark.skipif(importlib.util.find_spec("verl") is not None, reason="verl is installed in this venv")
def test_install_without_verl_says_so():
    with pytest.raises(ImportError, match=r"install\(\): verl is not importable"):
        install()
