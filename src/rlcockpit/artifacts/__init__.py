"""Versioned artifacts: content-addressed files, versions ``name:vN``, aliases, lineage.

The storage lives in :mod:`rlcockpit.store.artifacts` (so tracking can use it); logging from a run in
:mod:`rlcockpit.tracking.artifacts`; this package holds the command line (``rlcockpit artifact ...``).
See docs/sweeps.md.
"""

from rlcockpit.store.artifacts import ArtifactError, ArtifactRegistry, ArtifactVersion, parse_ref
from rlcockpit.tracking.artifacts import Artifact, log_checkpoint

__all__ = ["Artifact", "ArtifactError", "ArtifactRegistry", "ArtifactVersion", "log_checkpoint", "parse_ref"]
