"""The verify room: proving a diagnosis' fix by a rerun (``rlcockpit diagnose RUN --verify``). ``verdict`` plans
the branches from the last checkpoint before the onset and judges each finding (confirmed, not confirmed, did
not reproduce); ``branches`` launches and budgets rlcockpit's own branch runs; ``resume_command`` prints the
commands that resume a verl or TRL run with the fix, and judges those reruns once they are in the store.

The folder map: docs/architecture.md.
"""
