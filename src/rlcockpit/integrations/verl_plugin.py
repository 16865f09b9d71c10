"""Imported by verl itself (``verl.plugins`` entry point, or ``VERL_USE_EXTERNAL_MODULES``): installs the
``rlcockpit`` tracking backend. Never raises: verl imports plugins while ``import verl`` runs, and a
tracking add-on must not stop a training job from starting."""

from __future__ import annotations

import logging
import sys

try:
    from rlcockpit.integrations.verl import install

    install()
except Exception as _exc:  # noqa: BLE001
    logging.getLogger("rlcockpit").warning("rlcockpit: verl backend not installed: %s", _exc)
    print(f"rlcockpit: verl backend not installed: {_exc}", file=sys.stderr)
