"""``python -m rlcockpit`` = the ``rlcockpit`` command (sweep agents launch trials this way, so a trial runs
the same installation as its agent whatever ``PATH`` holds)."""

import sys

from rlcockpit.cli import main

sys.exit(main())
