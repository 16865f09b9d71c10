"""Puts ``bench/detection_corpus/gen`` on ``sys.path``.

A pass runs as a script (``python bench/detection_corpus/gen/passes/real_cpu_trl14.py``), so Python puts only this
folder on the path; the shared generator code it builds on (``real_cpu_trainer``, ``real_cpu_trl``,
``real_trainer``) lives one level up. Each pass imports this module first.
"""

import sys
from pathlib import Path

GEN = str(Path(__file__).resolve().parent.parent)
if GEN not in sys.path:
    sys.path.insert(0, GEN)
