"""The diagnosis room: turning a run's findings into a diagnosis a person acts on. ``diagnose`` replays a stored
run through the live detectors and links the findings into a root-cause chain; ``evidence`` weighs how much
advice the evidence justifies; ``overrides`` merges the proposed config changes into one list to paste;
``reviews`` reads people's ratings back as findings; ``profiles`` adds the profiler's top-ops tables; ``report``
renders it all as terminal text or one self-contained HTML file.

The folder map: docs/architecture.md.
"""
